package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
)

// statusCommand prints, for a person, what the probes see: whether
// Temporal answers, and the /readyz of the gateway (REPLYFLOW_WEBCHAT_ADDR)
// and of the process on REPLYFLOW_METRICS_ADDR, or of the URLs given. It
// fails when anything is not ready, so a script can use it too.
func statusCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var urls repeated
	fs.Var(&urls, "ready", "a /readyz URL to ask (repeatable); default: the gateway's and REPLYFLOW_METRICS_ADDR's")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\nusage: replyflow status [--ready URL]...", err)
	}
	if len(urls) == 0 {
		urls = append(urls, "http://"+cfg.WebchatAddr+"/readyz")
		if cfg.MetricsAddr != "" {
			urls = append(urls, "http://"+cfg.MetricsAddr+"/readyz")
		}
	}
	problems := 0
	if err := temporalAnswers(ctx, cfg, logger); err != nil {
		fmt.Fprintf(out, "Temporal        not reachable: %v\n", err)
		problems++
	} else {
		fmt.Fprintln(out, "Temporal        reachable")
	}
	for _, u := range urls {
		line, ok := readiness(ctx, u, operatorToken(cfg, u))
		fmt.Fprintf(out, "%-15s %s\n", strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/readyz"), line)
		if !ok {
			problems++
		}
	}
	if problems > 0 {
		return fmt.Errorf("%d of %d not ready", problems, len(urls)+1)
	}
	return nil
}

func temporalAnswers(ctx context.Context, cfg Config, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// operatorToken is what status shows the gateway at address to be told
// why a check fails (see operatorDetail): the web chat's bot token, sent
// only to the gateway's own address (REPLYFLOW_WEBCHAT_ADDR) or where the
// worker reaches it (REPLYFLOW_WEBCHAT_URL), the places this config sends
// it anyway; "" for any other address, which then names what fails
// without saying why.
func operatorToken(cfg Config, address string) string {
	chat := webchatSettings(cfg)
	if chat == nil || !chat.On || chat.BotToken == "" {
		return ""
	}
	to, err := url.Parse(address)
	if err != nil {
		return ""
	}
	for _, own := range []string{"http://" + cfg.WebchatAddr, chat.URL} {
		if u, err := url.Parse(own); err == nil && u.Host != "" && strings.EqualFold(u.Scheme, to.Scheme) && strings.EqualFold(u.Host, to.Host) {
			return chat.BotToken
		}
	}
	return ""
}

// readiness is one /readyz answer as a line: ready, or what fails.
func readiness(ctx context.Context, address, token string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
	if err != nil {
		return "bad URL: " + err.Error(), false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "not answering (is it running?): " + err.Error(), false
	}
	defer resp.Body.Close()
	var body struct {
		Failing map[string]string `json:"failing"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body)
	if resp.StatusCode == http.StatusOK {
		return "ready", true
	}
	var parts []string
	for name, why := range body.Failing {
		parts = append(parts, name+": "+why)
	}
	sort.Strings(parts)
	return fmt.Sprintf("NOT READY (%d): %s", resp.StatusCode, strings.Join(parts, "; ")), false
}
