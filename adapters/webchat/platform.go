package webchat

import (
	"context"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Platform registers the web chat with the replyflow commands (see
// package gateway); its fields are the REPLYFLOW_WEBCHAT_* settings.
// REPLYFLOW_WEBCHAT_ADDR, the gateway's own address, is the commands'.
type Platform struct {
	On bool `envconfig:"WEBCHAT_ENABLED" default:"true"`
	// URL is where the worker reaches the gateway's web chat.
	URL      string `envconfig:"WEBCHAT_URL" default:"http://127.0.0.1:8080"`
	BotToken string `envconfig:"WEBCHAT_BOT_TOKEN"`
	// Emoji overrides the reaction emoji, state:emoji.
	Emoji map[string]string `envconfig:"WEBCHAT_EMOJI"`
	// Origins are browser origins besides the gateway's own whose pages
	// may post to the web chat API.
	Origins []string `envconfig:"WEBCHAT_ORIGINS"`
}

var _ adapters.Platform = (*Platform)(nil)

func (p *Platform) Channel() string     { return Channel }
func (p *Platform) Enabled() bool       { return p.On }
func (p *Platform) HowToEnable() string { return "REPLYFLOW_WEBCHAT_ENABLED=true" }

// Summary is empty: the dev banner shows the web chat's address itself.
func (p *Platform) Summary() string { return "" }

func (p *Platform) Validate() []error {
	_, errs := adapters.ReactionOverrides("REPLYFLOW_WEBCHAT_EMOJI", p.Emoji, nil)
	return errs
}

// Serve mounts the web chat (page, user API, event streams, bot API) at
// the root of the gateway's mux.
func (p *Platform) Serve(_ context.Context, gw adapters.GatewaySide) (adapters.Serving, error) {
	chat, err := NewServer(ServerConfig{
		Sink: gw.Sink, BotToken: p.BotToken, Logger: gw.Logger, StreamWriteTimeout: gw.WriteTimeout, TrustedOrigins: p.Origins,
	})
	if err != nil {
		return adapters.Serving{}, err
	}
	gw.Mux.Handle("/", chat)
	gw.Health.Report(Channel, adapters.Health{State: adapters.StateUp})
	return adapters.Serving{Close: chat.CloseStreams}, nil
}

// Outbound is the worker's client of the gateway's bot API.
func (p *Platform) Outbound(adapters.WorkerSide) (adapters.Outbound, error) {
	wc, err := NewClient(p.URL, p.BotToken, nil)
	if err != nil {
		return nil, err
	}
	for state, emoji := range p.Emoji {
		wc.SetEmoji(pipeline.ReactionState(state), emoji)
	}
	return wc, nil
}
