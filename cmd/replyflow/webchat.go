package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters/webchat"
)

const webchatTokenUsage = "usage: replyflow webchat token <sender> [--owner] [--name N] [--chat C]... | [--all-chats] [--ttl 720h] [--url U]\n" +
	"  a token reaches only the chats --chat names; without --chat, only its sender's own chat (the chat whose ID is <sender>);\n" +
	"  --all-chats reaches every chat, everyone's history included: for a trusted front end or an operator only"

// webchatCommand is `replyflow webchat token`: it signs a web chat sign-in
// with REPLYFLOW_WEBCHAT_AUTH_KEY, offline (no Temporal, no gateway).
func webchatCommand(args []string, cfg Config, out, warn io.Writer, now time.Time) error {
	if len(args) == 0 || args[0] != "token" {
		return errors.New(webchatTokenUsage)
	}
	fs := flag.NewFlagSet("webchat token", flag.ContinueOnError)
	fs.SetOutput(warn)
	owner := fs.Bool("owner", false, "the sender is an owner: may decide proposals and pick any /model")
	name := fs.String("name", "", "the name shown for the sender (default: the sender ID)")
	var chats chatList
	fs.Var(&chats, "chat", "the sign-in reaches this chat (repeat for more, up to 20; default: only the chat whose ID is the sender ID)")
	allChats := fs.Bool("all-chats", false, "the sign-in reaches every chat: it reads and posts in any user's chat (a trusted front end's or an operator's)")
	ttl := fs.Duration("ttl", 720*time.Hour, "how long the sign-in lasts; 0 for no expiry (revoke by rotating the key)")
	base := fs.String("url", "", "the web chat's address as browsers reach it (default: REPLYFLOW_WEBCHAT_URL if set, else http://REPLYFLOW_WEBCHAT_ADDR)")
	// The sender may come before the flags, as the usage shows it.
	var senders []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		senders, rest = append(senders, fs.Arg(0)), fs.Args()[1:]
	}
	if len(senders) != 1 {
		return errors.New(webchatTokenUsage)
	}
	if *allChats && len(chats) > 0 {
		return errors.New("--all-chats and --chat exclude each other: name the chats the sign-in reaches, or ask for every chat")
	}
	chat := webchatSettings(cfg)
	if chat == nil {
		return errors.New("the web chat platform is not registered in this build")
	}
	signer, err := webchat.NewSigner(chat.AuthKey)
	if err != nil {
		return err
	}
	if mode, _ := webchat.ParseAuthMode(chat.Auth); mode == webchat.AuthNone {
		fmt.Fprintln(warn, "Note: REPLYFLOW_WEBCHAT_AUTH=none here; a gateway in none mode ignores tokens.")
	}
	issued, err := signer.Issue(webchat.Claims{Sub: senders[0], Name: *name, Owner: *owner, Chats: chats, AllChats: *allChats}, *ttl, now)
	if err != nil {
		return fmt.Errorf("sign a token for %q: %w", senders[0], err)
	}
	link := strings.TrimRight(webchatBaseURL(cfg, chat, *base), "/") + "/login?t=" + url.QueryEscape(issued.Login)

	scope := fmt.Sprintf("only the chat %q, its own; --chat names others", senders[0])
	switch {
	case *allChats:
		scope = "EVERY chat"
	case len(chats) > 0:
		scope = "chats " + strings.Join(chats, ", ")
	}
	role, expires := "", "never expires"
	if *owner {
		role = ", owner"
	}
	if *ttl > 0 {
		expires = "expires " + now.Add(*ttl).UTC().Format("2006-01-02 15:04 UTC")
	}
	fmt.Fprintf(out, "Web chat sign-in for %s%s (%s; %s)\n\n", senders[0], role, scope, expires)
	if *allChats {
		fmt.Fprintf(out, "Whoever holds this sign-in may read and post in any user's chat, history included: give it only to a trusted front end or an operator.\n\n")
	}
	fmt.Fprintf(out, "Bearer token, for programs (Authorization: Bearer <token>):\n%s\n\n", issued.User)
	fmt.Fprintf(out, "Login link, for a browser (works once, until %s):\n%s\n", issued.LoginExpires.UTC().Format("15:04 UTC"), link)
	return nil
}

// chatList is a repeatable --chat.
type chatList []string

func (c *chatList) String() string { return strings.Join(*c, ",") }
func (c *chatList) Set(v string) error {
	*c = append(*c, v)
	return nil
}

// webchatBaseURL is where a browser opens the login link: --url, else
// REPLYFLOW_WEBCHAT_URL when set, else the gateway's own address.
func webchatBaseURL(cfg Config, chat *webchat.Platform, flagURL string) string {
	switch {
	case flagURL != "":
		return flagURL
	case os.Getenv("REPLYFLOW_WEBCHAT_URL") != "":
		return chat.URL
	}
	return "http://" + cfg.WebchatAddr
}

// webchatSettings is cfg's web chat platform, nil if none is registered.
func webchatSettings(cfg Config) *webchat.Platform {
	for _, p := range cfg.Platforms {
		if chat, ok := p.(*webchat.Platform); ok {
			return chat
		}
	}
	return nil
}

// checkWebchatListener refuses to serve the web chat on addr where anyone
// who reaches it could speak as anyone (see webchat.Platform.CheckListener).
func checkWebchatListener(cfg Config, addr net.Addr) error {
	if chat := webchatSettings(cfg); chat != nil {
		return chat.CheckListener(addr)
	}
	return nil
}

// devWebchatAuth keeps `replyflow dev`'s convenience: on a loopback
// address, unless REPLYFLOW_WEBCHAT_AUTH says otherwise, the web chat signs
// no one in. cfg's platforms must be its own (Config.withOwnPlatforms).
func devWebchatAuth(cfg Config, addr net.Addr) {
	if chat := webchatSettings(cfg); chat != nil && os.Getenv("REPLYFLOW_WEBCHAT_AUTH") == "" && webchat.IsLoopback(addr) {
		chat.Auth = string(webchat.AuthNone)
	}
}

// webchatSignIn is the dev banner's line on how web chat users sign in.
func webchatSignIn(cfg Config) string {
	chat := webchatSettings(cfg)
	if chat == nil || !chat.On {
		return ""
	}
	if mode, _ := webchat.ParseAuthMode(chat.Auth); mode == webchat.AuthNone {
		return "no sign-in (loopback only: anyone on this machine may speak as anyone; set REPLYFLOW_WEBCHAT_AUTH=token to require tokens)"
	}
	return "sign in with the link `replyflow webchat token <you>` prints"
}
