package discordtest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

const (
	allIntents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsGuildMessageReactions |
		discordgo.IntentsDirectMessages | discordgo.IntentsDirectMessageReactions | discordgo.IntentMessageContent
	noContent = allIntents &^ discordgo.IntentMessageContent
)

// events are what discordgo's handlers received, in order (SyncEvents:
// discordgo otherwise runs each handler on a goroutine of its own).
type events struct {
	ready        chan *discordgo.Ready
	resumed      chan *discordgo.Resumed
	guilds       chan *discordgo.GuildCreate
	messages     chan *discordgo.MessageCreate
	reactions    chan *discordgo.MessageReactionAdd
	interactions chan *discordgo.InteractionCreate
}

// connect opens dg's gateway with the intents; it closes with the test.
func connect(t *testing.T, dg *discordgo.Session, intents discordgo.Intent) *events {
	t.Helper()
	ev := &events{make(chan *discordgo.Ready, 10), make(chan *discordgo.Resumed, 10), make(chan *discordgo.GuildCreate, 10),
		make(chan *discordgo.MessageCreate, 100), make(chan *discordgo.MessageReactionAdd, 100), make(chan *discordgo.InteractionCreate, 10)}
	dg.SyncEvents = true
	dg.Identify.Intents = intents
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.Ready) { ev.ready <- e })
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.Resumed) { ev.resumed <- e })
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.GuildCreate) { ev.guilds <- e })
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageCreate) { ev.messages <- e })
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.MessageReactionAdd) { ev.reactions <- e })
	dg.AddHandler(func(_ *discordgo.Session, e *discordgo.InteractionCreate) { ev.interactions <- e })
	if err := dg.Open(); err != nil {
		t.Fatalf("open the gateway: %v", err)
	}
	t.Cleanup(func() { closeForGood(dg) })
	return ev
}

// closeForGood closes dg. It does not turn discordgo's reconnecting off:
// discordgo reads ShouldReconnectOnError without its lock as a reconnect
// begins, so writing it while the fake drops connections is a data race.
// A reconnect that begins after Close finds the fake closed by its own
// cleanup and waits in discordgo's backoff until the test binary exits.
func closeForGood(dg *discordgo.Session) {
	_ = dg.Close()
}

func next[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("no %s from the gateway", what)
		panic("unreachable")
	}
}

func waitFor(t *testing.T, fake *discordtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := fake.WaitFor(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestGatewayIdentifyReadyAndDispatches(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	ev := connect(t, dg, allIntents)
	ready := next(t, ev.ready, "READY")
	if ready.User.ID != fake.BotID || ready.SessionID == "" || len(ready.Guilds) != 1 {
		t.Errorf("READY = %+v, want the bot, a session and the guild", ready)
	}
	id := fake.Identifies()
	if len(id) != 1 || !id[0].MessageContent || id[0].Intents != uint64(allIntents) || id[0].Session != ready.SessionID || id[0].Token != "Bot "+fake.Token {
		t.Errorf("identifies = %+v, want one with MESSAGE_CONTENT and the intents", id)
	}
	if g := next(t, ev.guilds, "GUILD_CREATE"); g.MemberCount != 3 || len(g.Channels) != 1 || len(g.Threads) != 1 {
		t.Errorf("GUILD_CREATE = %+v, want the guild with general and the thread", g.Guild)
	}

	posted := fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "hello there"})
	got := next(t, ev.messages, "MESSAGE_CREATE")
	if got.ID != posted.ID || got.Content != "hello there" || got.ChannelID != thread || got.GuildID != guildID || got.Author.ID != ada || got.Member == nil {
		t.Errorf("MESSAGE_CREATE = %+v, want ada's message in the thread with its member", got.Message)
	}
	mine, err := dg.ChannelMessageSend(thread, "an answer")
	if err != nil {
		t.Fatal(err)
	}
	if own := next(t, ev.messages, "MESSAGE_CREATE"); own.ID != mine.ID || own.Author.ID != fake.BotID {
		t.Errorf("own message = %+v, want the bot's, dispatched like any other", own.Message)
	}
	fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "thanks", ReplyTo: mine.ID})
	reply := next(t, ev.messages, "MESSAGE_CREATE")
	if reply.ReferencedMessage == nil || reply.ReferencedMessage.Author.ID != fake.BotID || !slices.ContainsFunc(reply.Mentions, func(u *discordgo.User) bool { return u.ID == fake.BotID }) {
		t.Errorf("reply = %+v, want it to reference and mention the bot", reply.Message)
	}
	fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "psst"})
	if dm := next(t, ev.messages, "MESSAGE_CREATE"); dm.GuildID != "" || dm.ChannelID != dmID || dm.Content != "psst" {
		t.Errorf("DM = %+v, want it without a guild", dm.Message)
	}

	fake.React(thread, mine.ID, ada, "👍")
	if r := next(t, ev.reactions, "MESSAGE_REACTION_ADD"); r.UserID != ada || r.Emoji.Name != "👍" || r.MessageID != mine.ID || r.Member == nil {
		t.Errorf("reaction = %+v, want ada's 👍 on the bot's message", r.MessageReaction)
	}
	if err := dg.MessageReactionAdd(thread, posted.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if r := next(t, ev.reactions, "MESSAGE_REACTION_ADD"); r.UserID != fake.BotID || r.Emoji.Name != "👀" {
		t.Errorf("own reaction = %+v, want the bot's 👀 dispatched too", r.MessageReaction)
	}
	waitFor(t, fake, "heartbeats", func() bool { return fake.Heartbeats() >= 2 && fake.Connections() == 1 })
}

func TestGatewayWithoutTheMessageContentIntent(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	ev := connect(t, dg, noContent)
	fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "secret"})
	fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "<@" + fake.BotID + "> hi"})
	fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "psst"})
	for _, want := range []string{"", "<@" + fake.BotID + "> hi", "psst"} {
		if m := next(t, ev.messages, "MESSAGE_CREATE"); m.Content != want {
			t.Errorf("content = %q, want %q", m.Content, want)
		}
	}
	if id := fake.Identifies(); len(id) != 1 || id[0].MessageContent {
		t.Errorf("identifies = %+v, want one without MESSAGE_CONTENT", id)
	}
}

func TestGatewayDispatchesOnlyWhatTheIntentsAskFor(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	ev := connect(t, dg, discordgo.IntentsDirectMessages|discordgo.IntentMessageContent)
	fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "in the guild"})
	fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "in private"})
	if m := next(t, ev.messages, "MESSAGE_CREATE"); m.Content != "in private" {
		t.Errorf("got %q, want only the DM without GUILD_MESSAGES", m.Content)
	}
	select {
	case g := <-ev.guilds:
		t.Errorf("GUILD_CREATE %s without the GUILDS intent", g.ID)
	default:
	}
}

func TestGatewayRefusesABadTokenAndADisallowedIntent(t *testing.T) {
	fake, _ := start(t, discordtest.Options{DenyMessageContent: true})
	dg := session(t, fake, fake.Token)
	dg.Identify.Intents = allIntents
	if err := dg.Open(); err == nil || !strings.Contains(err.Error(), "4014") {
		t.Errorf("open asking for a denied MESSAGE_CONTENT: err = %v, want close 4014", err)
	}
	wrong := session(t, fake, "wrong")
	if err := wrong.Open(); err == nil || !strings.Contains(err.Error(), "4004") {
		t.Errorf("open with a wrong token: err = %v, want close 4004", err)
	}
	id := fake.Identifies()
	if len(id) != 2 || id[0].CloseCode != 4014 || !id[0].MessageContent || id[1].CloseCode != 4004 {
		t.Errorf("identifies = %+v, want 4014 then 4004", id)
	}
	connect(t, session(t, fake, fake.Token), noContent) // without the intent it is fine
}

// calm is a heartbeat interval long enough that discordgo's heartbeat
// goroutine sleeps through a reconnect: when it is awake as the
// connection breaks, it calls Close and reconnect beside the listener's,
// and its late Close can end the fresh connection with 1000 (which
// Discord takes as the end of the session). A real 41s interval makes
// that rare; 50ms makes it likely.
// The tests that break a connection use it, and wait until discordgo
// settled (its first heartbeat sent) before they do.
var calm = discordtest.Options{HeartbeatInterval: 10 * time.Second}

// settled waits until dg's heartbeat goroutine is done with its first
// beat (DataReady, set under the session's lock): from then on it sleeps
// on its ticker and leaves quietly when the connection closes.
func settled(t *testing.T, dg *discordgo.Session) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for {
		dg.RLock()
		ready := dg.DataReady
		dg.RUnlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("discordgo never sent its first heartbeat")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// postWhileDown cuts the gateway, posts ada's message in general while
// no connection can be made, and lets the client back in.
func postWhileDown(t *testing.T, fake *discordtest.Server, content string) discordtest.Message {
	t.Helper()
	fake.RefuseConnections(true)
	defer fake.RefuseConnections(false)
	fake.DropConnections()
	waitFor(t, fake, "the drop", func() bool { return fake.Connections() == 0 })
	return fake.Post(discordtest.Post{Channel: general, Author: ada, Content: content})
}

func TestGatewayResumeReplaysWhatWasMissed(t *testing.T) {
	fake, dg := start(t, calm)
	ev := connect(t, dg, allIntents)
	first := next(t, ev.ready, "READY")
	next(t, ev.guilds, "GUILD_CREATE") // discordgo's seq is 2 from here
	settled(t, dg)
	missed := postWhileDown(t, fake, "while you were out")
	next(t, ev.resumed, "RESUMED")
	if got := next(t, ev.messages, "MESSAGE_CREATE"); got.ID != missed.ID {
		t.Errorf("after the resume got %s, want the missed %s", got.ID, missed.ID)
	}
	later := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "later"})
	if got := next(t, ev.messages, "MESSAGE_CREATE"); got.ID != later.ID {
		t.Errorf("next message %s %q, want %s once: nothing twice", got.ID, got.Content, later.ID)
	}
	r := fake.Resumes()
	if len(r) != 1 || !r[0].Resumed || r[0].Session != first.SessionID || r[0].Replayed != 1 || len(fake.Identifies()) != 1 {
		t.Errorf("resumes = %+v, identifies %d; want one resume replaying one dispatch", r, len(fake.Identifies()))
	}
}

func TestGatewayInvalidSessionIdentifiesAfresh(t *testing.T) {
	fake, dg := start(t, calm)
	ev := connect(t, dg, allIntents)
	first := next(t, ev.ready, "READY")
	next(t, ev.guilds, "GUILD_CREATE") // discordgo's seq is 2 from here
	settled(t, dg)
	fake.InvalidateSessions()
	missed := postWhileDown(t, fake, "lost to the gateway")
	if again := next(t, ev.ready, "a second READY"); again.SessionID == first.SessionID {
		t.Errorf("second READY kept session %s, want a new one", again.SessionID)
	}
	later := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "after"})
	if got := next(t, ev.messages, "MESSAGE_CREATE"); got.ID != later.ID {
		t.Errorf("got %q, want only what came after the new session", got.Content)
	}
	if r := fake.Resumes(); len(r) != 1 || r[0].Resumed || len(fake.Identifies()) != 2 {
		t.Errorf("resumes = %+v, want one refused with op 9, then a second IDENTIFY", r)
	}
	history, err := dg.ChannelMessages(general, 0, "", missed.ID, "")
	if err != nil || len(history) != 1 || history[0].ID != later.ID {
		t.Errorf("history after the missed message = %+v, %v; want the later one", history, err)
	}
	if history, _ := dg.ChannelMessages(general, 0, "", "", ""); len(history) != 2 || history[1].ID != missed.ID {
		t.Errorf("history = %+v, want the missed message kept for a catch-up", history)
	}
}

func TestGatewayZombieConnectionIsReplaced(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	ev := connect(t, dg, allIntents)
	next(t, ev.ready, "READY")
	fake.Zombify()
	fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "into the void"})
	// discordgo gives up after 5 intervals without an ACK and closes with
	// 1000, which ends the session: the RESUME is refused, it identifies.
	next(t, ev.ready, "a READY after the zombie")
	if r := fake.Resumes(); len(r) != 1 || r[0].Resumed || fake.Opened() != 2 {
		t.Errorf("resumes = %+v, opened %d; want a refused resume on a second connection", r, fake.Opened())
	}
	after := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "hello again"})
	if got := next(t, ev.messages, "MESSAGE_CREATE"); got.ID != after.ID {
		t.Errorf("got %q, want the message posted after the new session", got.Content)
	}
}

func TestGatewayOpcode7ReconnectResumes(t *testing.T) {
	fake, dg := start(t, calm)
	ev := connect(t, dg, allIntents)
	next(t, ev.ready, "READY")
	settled(t, dg)
	fake.Reconnect()
	next(t, ev.resumed, "RESUMED")
	if r := fake.Resumes(); len(r) != 1 || !r[0].Resumed || len(fake.Identifies()) != 1 {
		t.Errorf("resumes = %+v, want the session resumed after op 7", r)
	}
	posted := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "still here"})
	if got := next(t, ev.messages, "MESSAGE_CREATE"); got.ID != posted.ID {
		t.Errorf("got %q, want the message on the resumed session", got.Content)
	}
}

func TestGatewayRefusesTheIdentifyAfterARefusedResume(t *testing.T) {
	fake, dg := start(t, calm)
	ev := connect(t, dg, allIntents)
	next(t, ev.ready, "READY")
	settled(t, dg)
	fake.RefuseIdentifies(4014)
	fake.InvalidateSessions()
	fake.DropConnections()
	// discordgo resumes, takes op 9, identifies on the same connection and
	// is closed with 4014 (then does it again, by itself, with backoff).
	waitFor(t, fake, "a refused IDENTIFY after the RESUME", func() bool { return len(fake.Identifies()) >= 2 })
	if r, id := fake.Resumes(), fake.Identifies(); len(r) < 1 || r[0].Resumed || id[1].CloseCode != 4014 || id[1].Session != "" {
		t.Errorf("resumes = %+v, identifies = %+v; want the RESUME refused with op 9, then the IDENTIFY closed with 4014", r, id)
	}
}

func TestGatewayCloseWithACodeKeepsTheSession(t *testing.T) {
	fake, dg := start(t, calm)
	ev := connect(t, dg, allIntents)
	next(t, ev.ready, "READY")
	settled(t, dg)
	fake.CloseConnections(4000)
	// discordgo answers the close with its own 1000, which is the closing
	// handshake, not the end of the session.
	next(t, ev.resumed, "RESUMED")
	if r := fake.Resumes(); len(r) != 1 || !r[0].Resumed || len(fake.Identifies()) != 1 {
		t.Errorf("resumes = %+v, identifies %d; want the session resumed after close 4000", r, len(fake.Identifies()))
	}
}
