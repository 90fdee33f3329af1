package discordtest_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

const (
	guildID  = "100000000000000100"
	general  = "100000000000000200" // a guild text channel
	thread   = "100000000000000201" // a thread in general
	dmID     = "100000000000000300"
	ada      = "100000000000000500"
	peerBot  = "100000000000000501"
	testWait = 20 * time.Second
)

// clock is a settable clock for Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// start is a fake with a guild (3 members), a text channel, a thread in
// it and a DM with ada, and a discordgo session sending to it, its own
// rate-limit retries off as the adapter will have them.
func start(t *testing.T, opts discordtest.Options) (*discordtest.Server, *discordgo.Session) {
	t.Helper()
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 50 * time.Millisecond
	}
	fake := discordtest.New(opts)
	t.Cleanup(fake.Close)
	fake.AddGuild(discordtest.Guild{ID: guildID, Name: "home", Members: 3})
	fake.AddChannel(discordtest.Channel{ID: general, Type: discordtest.GuildText, GuildID: guildID, Name: "general"})
	fake.AddChannel(discordtest.Channel{ID: thread, Type: discordtest.PublicThread, GuildID: guildID, ParentID: general, Name: "a thread"})
	fake.AddChannel(discordtest.Channel{ID: dmID, Type: discordtest.DM, Recipient: ada})
	fake.AddUser(discordtest.User{ID: ada, Name: "ada"})
	fake.AddUser(discordtest.User{ID: peerBot, Name: "peer", Bot: true})
	return fake, session(t, fake, fake.Token)
}

func session(t *testing.T, fake *discordtest.Server, token string) *discordgo.Session {
	t.Helper()
	dg, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	dg.Client = fake.Client()
	dg.ShouldRetryOnRateLimit = false
	return dg
}

func restCode(err error) (status, code int) {
	var rest *discordgo.RESTError
	if !errors.As(err, &rest) {
		return 0, 0
	}
	if rest.Message != nil {
		code = rest.Message.Code
	}
	return rest.Response.StatusCode, code
}

func TestMeChannelsAndGuildCounts(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	me, err := dg.User("@me")
	if err != nil || me.ID != fake.BotID || !me.Bot {
		t.Fatalf("users/@me = %+v, %v; want the bot", me, err)
	}
	th, err := dg.Channel(thread)
	if err != nil || th.Type != discordgo.ChannelTypeGuildPublicThread || th.ParentID != general || th.GuildID != guildID {
		t.Errorf("thread channel = %+v, %v; want a public thread in general", th, err)
	}
	dm, err := dg.Channel(dmID)
	if err != nil || dm.Type != discordgo.ChannelTypeDM || len(dm.Recipients) != 1 || dm.Recipients[0].ID != ada {
		t.Errorf("DM channel = %+v, %v; want ada's DM", dm, err)
	}
	g, err := dg.GuildWithCounts(guildID)
	if err != nil || g.ApproximateMemberCount != 3 {
		t.Errorf("guild with counts = %+v, %v; want 3 members", g, err)
	}
	if g, err := dg.Guild(guildID); err != nil || g.ApproximateMemberCount != 0 {
		t.Errorf("guild without counts = %+v, %v; want no count", g, err)
	}
	if _, err := dg.Channel("404"); !hasCode(err, 404, 10003) {
		t.Errorf("unknown channel: err = %v, want 404 10003", err)
	}
	if _, err := session(t, fake, "wrong").User("@me"); !hasCode(err, 401, 0) {
		t.Errorf("wrong token: err = %v, want 401", err)
	}
	if calls := fake.Calls(discordtest.RouteMe); len(calls) != 2 || calls[0].Status != 200 || calls[1].Status != 401 {
		t.Errorf("recorded %+v, want users/@me answered 200 then 401", calls)
	}
}

// ref is a message_reference to a message in general; fail false is a
// soft reply (discordgo's Message.SoftReference).
func ref(id string, fail bool) *discordgo.MessageReference {
	return &discordgo.MessageReference{MessageID: id, ChannelID: general, FailIfNotExists: &fail}
}

func hasCode(err error, status, code int) bool {
	s, c := restCode(err)
	return s == status && c == code
}

// sendRaw posts a message body as the adapter must for a nonce:
// discordgo's MessageSend has no nonce field.
func sendRaw(dg *discordgo.Session, channel string, body map[string]any) (*discordgo.Message, error) {
	endpoint := discordgo.EndpointChannelMessages(channel)
	resp, err := dg.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint)
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	return &m, discordgo.Unmarshal(resp, &m)
}

func TestEnforcedNonceReturnsTheMessageAlreadyCreated(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	fake, dg := start(t, discordtest.Options{Now: clk.Now})
	body := map[string]any{"content": "part 1", "nonce": "rf-7f3a-t2-c0", "enforce_nonce": true}
	first, err := sendRaw(dg, general, body)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sendRaw(dg, general, body)
	if err != nil || again.ID != first.ID || again.Content != "part 1" {
		t.Fatalf("second send = %+v, %v; want message %s again", again, err, first.ID)
	}
	if sent := fake.Sent(general); len(sent) != 1 || sent[0].Nonce != "rf-7f3a-t2-c0" || !sent[0].EnforceNonce {
		t.Fatalf("sent = %+v, want one message with the enforced nonce", sent)
	}
	// Another channel, an unenforced nonce, or an expired window: new messages.
	if other, err := sendRaw(dg, thread, body); err != nil || other.ID == first.ID {
		t.Errorf("same nonce in the thread = %+v, %v; want a new message", other, err)
	}
	loose := map[string]any{"content": "part 1", "nonce": "rf-7f3a-t2-c0"}
	if m, err := sendRaw(dg, general, loose); err != nil || m.ID == first.ID {
		t.Errorf("unenforced nonce = %+v, %v; want a new message", m, err)
	}
	clk.Add(fake.NonceWindow + time.Second)
	if m, err := sendRaw(dg, general, body); err != nil || m.ID == first.ID {
		t.Errorf("after the window = %+v, %v; want a new message", m, err)
	}
	long := map[string]any{"content": "x", "nonce": "0123456789012345678901234567", "enforce_nonce": true}
	if _, err := sendRaw(dg, general, long); !hasCode(err, 400, 50035) {
		t.Errorf("a 28-character nonce: err = %v, want 400 50035", err)
	}
	if calls := fake.Calls(discordtest.RouteSend); len(calls) != 6 || calls[1].Body["enforce_nonce"] != true {
		t.Errorf("calls = %+v, want 6 sends recorded with their bodies", calls)
	}
}

func TestRepliesMentionsAndButtons(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	asked := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "hi <@" + fake.BotID + ">"})
	none := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	row := discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{CustomID: "rf:approve:s1:p1", Label: "Approve", Style: discordgo.SuccessButton},
		discordgo.Button{CustomID: "rf:reject:s1:p1", Label: "Reject", Style: discordgo.DangerButton},
	}}
	sent, err := dg.ChannelMessageSendComplex(general, &discordgo.MessageSend{
		Content: "<@" + ada + "> see @everyone", AllowedMentions: none, Reference: ref(asked.ID, true),
		Components: []discordgo.MessageComponent{row},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message(general, sent.ID)
	if m.Reply != asked.ID || m.Type != 19 || sent.MessageReference == nil || sent.ReferencedMessage == nil {
		t.Errorf("reply = %+v (answered %+v), want a reply to %s", m, sent, asked.ID)
	}
	if !m.Pings.None() || m.AllowedMentions == nil || len(m.Mentions) != 1 {
		t.Errorf("pings %+v with allowed_mentions %+v, want none though ada is mentioned", m.Pings, m.AllowedMentions)
	}
	if len(m.Buttons) != 2 || m.Buttons[0].CustomID != "rf:approve:s1:p1" || len(sent.Components) != 1 {
		t.Errorf("buttons = %+v, want Approve and Reject", m.Buttons)
	}
	loud, err := dg.ChannelMessageSendReply(general, "@everyone", ref(asked.ID, true))
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message(general, loud.ID); !m.Pings.Everyone || len(m.Pings.Users) != 1 || m.Pings.Users[0] != ada {
		t.Errorf("pings without allowed_mentions = %+v, want everyone and the replied-to author", m.Pings)
	}

	fake.Delete(general, asked.ID)
	soft, err := dg.ChannelMessageSendReply(general, "still here", ref(asked.ID, false))
	if m, _ := fake.Message(general, soft.ID); err != nil || m.Reply != "" || m.Type != 0 {
		t.Errorf("soft reply to a deleted message = %+v, %v; want a plain message", m, err)
	}
	if _, err := dg.ChannelMessageSendReply(general, "x", ref(asked.ID, true)); !hasCode(err, 400, 50035) {
		t.Errorf("hard reply to a deleted message: err = %v, want 400 50035", err)
	}
	long := discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.Button{CustomID: strings.Repeat("x", 101), Label: "x"}}}
	if _, err := dg.ChannelMessageSendComplex(general, &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{long}}); !hasCode(err, 400, 50035) {
		t.Errorf("a 101-character custom_id: err = %v, want 400 50035", err)
	}
	if _, err := dg.ChannelMessageSend(general, strings.Repeat("ä", 2001)); !hasCode(err, 400, 50035) {
		t.Errorf("2001 characters: err = %v, want 400 50035", err)
	}
}

func TestEditClearsButtons(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	row := discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.Button{CustomID: "a", Label: "A"}}}
	sent, err := dg.ChannelMessageSendComplex(thread, &discordgo.MessageSend{Content: "approve?", Components: []discordgo.MessageComponent{row}})
	if err != nil {
		t.Fatal(err)
	}
	outcome := "approved by ada"
	if _, err := dg.ChannelMessageEditComplex(&discordgo.MessageEdit{Channel: thread, ID: sent.ID, Content: &outcome, Components: &[]discordgo.MessageComponent{}}); err != nil {
		t.Fatal(err)
	}
	if m, _ := fake.Message(thread, sent.ID); m.Content != outcome || len(m.Buttons) != 0 || m.Components != nil || m.Edits != 1 {
		t.Errorf("edited = %+v, want the outcome without buttons after one edit", m)
	}
	theirs := fake.Post(discordtest.Post{Channel: thread, Author: ada, Content: "mine"})
	if _, err := dg.ChannelMessageEdit(thread, theirs.ID, "x"); !hasCode(err, 403, 50005) {
		t.Errorf("edit of ada's message: err = %v, want 403 50005", err)
	}
}

func TestHistoryPagesAsDiscordDoes(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	var ids []string
	for _, text := range []string{"m1", "m2", "m3", "m4", "m5"} {
		ids = append(ids, fake.Post(discordtest.Post{Channel: general, Author: ada, Content: text}).ID)
	}
	texts := func(ms []*discordgo.Message) (out []string) {
		for _, m := range ms {
			out = append(out, m.Content)
		}
		return out
	}
	for _, tc := range []struct {
		name                 string
		limit                int
		before, after, round string
		want                 []string
	}{
		{"newest", 2, "", "", "", []string{"m5", "m4"}},
		{"after m1: the two next, newest first", 2, "", ids[0], "", []string{"m3", "m2"}},
		{"after m4", 50, "", ids[3], "", []string{"m5"}},
		{"before m3", 50, ids[2], "", "", []string{"m2", "m1"}},
		{"after a time before all", 0, "", discordtest.SnowflakeAt(time.Now().Add(-time.Hour)), "", []string{"m5", "m4", "m3", "m2", "m1"}},
	} {
		got, err := dg.ChannelMessages(general, tc.limit, tc.before, tc.after, tc.round)
		if err != nil || !slices.Equal(texts(got), tc.want) {
			t.Errorf("%s: got %v, %v; want %v", tc.name, texts(got), err, tc.want)
		}
	}
	if _, err := dg.ChannelMessages(general, 101, "", "", ""); !hasCode(err, 400, 50035) {
		t.Errorf("limit 101: err = %v, want 400 50035", err)
	}
}

func TestHistoryWithoutTheMessageContentIntent(t *testing.T) {
	fake, dg := start(t, discordtest.Options{DenyMessageContent: true})
	fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "secret"})
	fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "<@" + fake.BotID + "> hello"})
	fake.Post(discordtest.Post{Channel: dmID, Author: ada, Content: "in private"})
	got, err := dg.ChannelMessages(general, 0, "", "", "")
	if err != nil || len(got) != 2 || got[0].Content == "" || got[1].Content != "" {
		t.Errorf("guild history = %+v, %v; want the mention readable, the other empty", got, err)
	}
	if got, err := dg.ChannelMessages(dmID, 0, "", "", ""); err != nil || len(got) != 1 || got[0].Content != "in private" {
		t.Errorf("DM history = %+v, %v; want content in a DM", got, err)
	}
}

func TestReactionsAndTyping(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	m := fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "hi"})
	for _, emoji := range []string{"👀", "✍️", "👀", "#⃣", "blob:123456"} {
		if err := dg.MessageReactionAdd(general, m.ID, emoji); err != nil {
			t.Fatalf("add %s: %v", emoji, err)
		}
	}
	if err := dg.MessageReactionRemove(general, m.ID, "👀", "@me"); err != nil {
		t.Fatal(err)
	}
	if got := fake.Reactions(general, m.ID); !slices.Equal(got, []string{"✍️", "#⃣", "blob:123456"}) {
		t.Errorf("reactions = %q, want ✍️ #⃣ blob:123456 in order", got)
	}
	if err := dg.MessageReactionAdd(general, m.ID, "eyes"); !hasCode(err, 400, 10014) {
		t.Errorf("a Slack shortcode: err = %v, want 400 10014 Unknown Emoji", err)
	}
	if calls := fake.Calls(discordtest.RouteReact); len(calls) != 6 || calls[0].Vars["emoji"] != "👀" || calls[0].Vars["message"] != m.ID {
		t.Errorf("reaction calls = %+v, want the emoji unescaped in Vars", calls)
	}
	if err := dg.ChannelTyping(thread); err != nil {
		t.Fatal(err)
	}
	if typing := fake.Typing(thread); len(typing) != 1 {
		t.Errorf("typing in the thread = %v, want one", typing)
	}
}
