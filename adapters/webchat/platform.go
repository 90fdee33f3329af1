package webchat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

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
	// Auth is how users say who they are: token (a token signed with
	// AuthKey) or none (the body says; loopback only, see CheckListener).
	Auth    string `envconfig:"WEBCHAT_AUTH" default:"token"`
	AuthKey string `envconfig:"WEBCHAT_AUTH_KEY"`
}

var (
	_ adapters.Platform = (*Platform)(nil)
	_ adapters.Chunker  = (*Platform)(nil)
)

// MessageLimit is the length of one web chat message, in UTF-16 code
// units. The page shows a message of any length, so this is the web
// chat's own bound: a longer reply arrives as several messages.
const MessageLimit = 8000

// ChunkLimit is the web chat's message limit.
func (p *Platform) ChunkLimit() int { return MessageLimit }

// Chunk cuts with pipeline.Chunk: the page shows a chunk as sent.
func (p *Platform) Chunk(markdown string, limit int) []string { return pipeline.Chunk(markdown, limit) }

func (p *Platform) Channel() string     { return Channel }
func (p *Platform) Enabled() bool       { return p.On }
func (p *Platform) HowToEnable() string { return "REPLYFLOW_WEBCHAT_ENABLED=true" }

// Summary is empty: the dev banner shows the web chat's address itself.
func (p *Platform) Summary() string { return "" }

func (p *Platform) Validate() []error {
	_, errs := adapters.ReactionOverrides("REPLYFLOW_WEBCHAT_EMOJI", p.Emoji, nil)
	if _, err := ParseAuthMode(p.Auth); err != nil {
		errs = append(errs, err)
	}
	// An unset token is NewServer's and NewClient's concern.
	if adapters.Placeholder(p.BotToken) {
		errs = append(errs, errors.New("REPLYFLOW_WEBCHAT_BOT_TOKEN is the example's placeholder, with which anyone who reaches the gateway posts as the bot: set the same secret of your own on the worker and the gateway (`openssl rand -base64 32`)"))
	}
	// An unset key is the gateway's concern only (CheckListener): the
	// worker never needs it.
	if p.AuthKey != "" {
		if _, err := NewSigner(p.AuthKey); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// CheckListener refuses to serve the web chat on addr where anyone who
// reaches it could speak as anyone: in none mode off loopback, or in token
// mode without a key to verify tokens with.
func (p *Platform) CheckListener(addr net.Addr) error {
	if !p.On {
		return nil
	}
	mode, err := ParseAuthMode(p.Auth)
	if err != nil {
		return err
	}
	if mode == AuthNone {
		if !IsLoopback(addr) {
			return fmt.Errorf("REPLYFLOW_WEBCHAT_AUTH=none is allowed only on a loopback address (127.0.0.1, ::1), and the web chat listens on %s, where whoever reaches it could speak as anyone, an owner too: "+
				"set REPLYFLOW_WEBCHAT_AUTH=token with REPLYFLOW_WEBCHAT_AUTH_KEY (`openssl rand -base64 32`), or REPLYFLOW_WEBCHAT_ADDR=127.0.0.1:<port>", addr)
		}
		return nil
	}
	if _, err := NewSigner(p.AuthKey); err != nil {
		return fmt.Errorf("the web chat signs users in with tokens (REPLYFLOW_WEBCHAT_AUTH=token): %w; or, on a loopback address only, set REPLYFLOW_WEBCHAT_AUTH=none", err)
	}
	return nil
}

// IsLoopback says whether a listener's address is a TCP address on a
// loopback IP (0.0.0.0, every address, is not).
func IsLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// Serve mounts the web chat (page, user API, event streams, bot API) at
// the root of the gateway's mux, and stops the gateway when the worker's
// web chat URL leads to another gateway (single.go).
func (p *Platform) Serve(ctx context.Context, gw adapters.GatewaySide) (adapters.Serving, error) {
	chat, err := NewServer(ServerConfig{
		Sink: gw.Sink, BotToken: p.BotToken, Logger: gw.Logger, StreamWriteTimeout: gw.WriteTimeout, TrustedOrigins: p.Origins,
		Auth: AuthMode(p.Auth), AuthKey: p.AuthKey, ChatLog: gw.ChatLog,
		Uploads: gw.Uploads, MaxUploadBytes: gw.MaxFileBytes,
	})
	if err != nil {
		return adapters.Serving{}, err
	}
	gw.Mux.Handle("/", chat)
	gw.Health.Report(Channel, adapters.Health{State: adapters.StateUp})
	failed := make(chan error, 1)
	host := &singleHost{url: strings.TrimSuffix(p.URL, "/"), token: p.BotToken, instance: chat.instance, every: SingleHostCheckEvery,
		logger: gw.Logger, client: &http.Client{Timeout: 5 * time.Second}}
	go func() {
		if err := host.watch(ctx); err != nil {
			gw.Health.Report(Channel, adapters.Health{State: adapters.StateFailed, Error: err.Error()})
			failed <- err
		}
	}()
	return adapters.Serving{Close: chat.CloseStreams, Failed: failed}, nil
}

// Outbound is the worker's client of the gateway's bot API.
func (p *Platform) Outbound(ws adapters.WorkerSide) (adapters.Outbound, error) {
	wc, err := NewClient(p.URL, p.BotToken, nil)
	if err != nil {
		return nil, err
	}
	if ws.Uploads != nil {
		wc.SetUploads(ws.Uploads)
	}
	for state, emoji := range p.Emoji {
		wc.SetEmoji(pipeline.ReactionState(state), emoji)
	}
	return wc, nil
}
