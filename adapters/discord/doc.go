// Package discord is replyflow's Discord adapter, shaped like the Slack
// and Telegram ones. It is the only code in replyflow that imports
// github.com/bwmarrin/discordgo; it must not import Temporal or the
// workflows, and is reached through the adapters contract only. The fake
// Discord for tests is discordtest.
//
// # Inbound: the gateway
//
// Platform.Serve starts a Gateway in the background (Discord being down
// holds up no other platform): one discordgo session over Discord's
// gateway WebSocket with the intents guilds, guild messages, direct
// messages, their reactions and the privileged MESSAGE_CONTENT. Discord
// closes an IDENTIFY that asks for an intent the application may not use
// with 4014; the gateway then logs it, shows "failed" on /healthz with
// MessageContentHint, and keeps trying (backoff up to 30 s, within the
// identify budget), so enabling the intent in the Developer Portal (Bot
// tab) is enough. The refusals no retry fixes (4004 token, 4010 and 4011
// shards, 4012 API version, 4013 intents) stop the gateway
// (Serving.Failed), each with its cause and what to do. Either is handled
// wherever it comes: at the first IDENTIFY, or at the one discordgo sends
// by itself after Discord refused a RESUME (op 9), whose close code it
// keeps to itself; the gateway then identifies once more on a new
// discordgo session to learn it. Every IDENTIFY spends the identify
// budget (budget.go): at most 100 in any 24 hours per gateway process, a
// tenth of the 1,000 after which Discord resets the token; once spent,
// even a RESUME waits (it may end in an IDENTIFY), and /healthz says
// until when. discordgo's own
// reconnect is off: Run reconnects itself (at once, then with backoff
// from 1 s to 30 s), so each
// end of a connection is logged and /healthz says connecting, up or
// failed. A connection that stays open but delivers nothing (no heartbeat
// ACK, no event) for 3 heartbeat intervals is closed by the watchdog with
// a code that keeps the session, and logged; its RESUME replays what
// Discord held back. discordgo would close it after 5 with 1000, which
// ends the session (the catch-up below then recovers the messages).
//
// Events are handled on discordgo's reader, in order (SyncEvents), and
// queued per Discord channel (a lane, see lanes.go): a channel's messages
// reach the Sink in order, one channel's slow Accept holds up no other.
// The lanes are bounded: 256 events a channel, 1024 channels at once, and
// the reader waits at most 2 s for room. A failed Accept is retried with
// backoff (1 s to 30 s, each failure logged) for up to 5 minutes. Discord
// never sends an event again, but keeps the messages, so a message that
// finds no room, or that the Sink did not take in 5 minutes, is not
// dropped: its channel switches to fetching its history from that
// message on, and keeps fetching (backoff up to 30 s) until the Sink
// takes them, in order, for as long as they are younger than
// REPLYFLOW_DISCORD_CATCHUP_MAX_AGE (older ones are logged as lost).
// Reactions have no history: one that finds no room or is not accepted in
// 5 minutes is lost, and logged as such. An event the gateway's rate
// limits dropped (adapters.RateLimitedError) is no failure: it counts as
// handed on, is neither retried nor fetched again, and a press is
// answered; the gateway's slow-down notice goes out through
// Gateway.Notify.
//
// Nothing is lost while the gateway is down: Discord replays what a
// session missed on a RESUME, but after a fresh IDENTIFY (a READY: a new
// process, a session Discord ended) it only exists in the channels'
// history. So after every READY the gateway lists the running Discord
// sessions (GatewaySide.Sessions: Temporal visibility), and for each
// session of this bot fetches, in its channel and the channel's active
// threads, the messages newer than its ReplyflowLastInboundAt (or its
// start, when no worker ran it yet) less a minute, at most
// REPLYFLOW_DISCORD_CATCHUP_LIMIT (100) a channel and none older than
// REPLYFLOW_DISCORD_CATCHUP_MAX_AGE (24h), and hands them on oldest first,
// before what arrives live (the lanes wait up to 30 s for the catch-up to
// be queued). The overlap with what the session already has is dropped by
// its dedupe. Limits: a channel with no running session (its first
// message was lost with the gateway) is not fetched; nor is a thread
// archived again since (threads archive after an hour or more without
// messages); nor are button presses and reactions made while down
// (Discord keeps no history of them: the presser saw the press fail).
//
// # Keys
//
// The session is the guild text channel or the DM channel: account = the
// bot's user ID (from READY), chat = the channel's ID; a message in a
// thread belongs to the session of the thread's parent channel, and its
// ThreadID, the lane inside the session, is the thread's own channel ID
// (where replies, reactions and edits go). Outside threads ThreadID is
// empty: reply chains are not lanes (unlike Telegram's), because a lane
// is where the answer goes, and on Discord a reply to a reply is answered
// in the channel, quoting it (ReplyTo). MessageID is the message's
// snowflake; ReplyTo the replied-to message, ReplyToBot when it is the
// bot's. MentionsBot is read from the text (<@id> or <@!id>), and the
// bot's mentions are stripped before commands are parsed ("<@B> /status"
// is "/status"); MentionsOthers when other users are mentioned and the
// bot is not (role mentions count as neither: the bot is also mentioned
// through its managed role). SenderIsBot for other bots and webhooks (the
// peer-bot loop guard); the bot's own messages are skipped, as are system
// messages (joins, pins, thread notices). ChatType is direct in a DM.
// Attachments are pipeline.Media references (the CDN URL, file name and
// type), never bytes; Discord signs attachment URLs, which expire after
// about a day.
//
// Membership: each guild message carries the guild's approximate member
// count less the bot (GET /guilds/{id}?with_counts=true, cached a minute
// per guild), marked Truncated because it is approximate and counts other
// bots: the engagement rules take it as a floor, never as fewer humans
// than they saw speak. Discord counts the guild, not the channel. DMs
// carry none.
//
// Reactions (MESSAGE_REACTION_ADD) on the bot's messages become Feedback
// (the emoji as Discord names it: the character, or name:id for a custom
// one); others' messages and the bot's own reactions are skipped. A
// reaction has no ID: its event ID is the message, the user and the
// emoji, so a replay is stored once.
//
// Button presses (INTERACTION_CREATE of a button) are handled at once,
// beside the lanes: an Inbound whose Action is the button's custom_id,
// ReplyTo the message carrying the button, SenderID the presser, ThreadID
// as for a message, MessageID the interaction's ID (unique per press) and
// ReplyToken its token (the worker's way to answer the presser alone).
// The press is answered with a deferred update (type 6) only once the
// Sink accepted it, within Discord's 3 s; when the Sink fails or takes
// longer it is not answered, so the presser sees "This interaction failed"
// and can press again, instead of believing a decision was taken.
//
// # Outbound
//
// Client is the worker's side of Discord (adapters.Outbound). It sends
// through discordgo's REST helpers with the payloads written here:
// discordgo's MessageSend has no nonce field, so a chunk is posted as a
// messageBody carrying nonce (Nonce of the Delivery's IdempotencyKey)
// and enforce_nonce: true. Discord then answers a send repeated within a
// few minutes in the same channel with the message it already created,
// so a Deliver retried after its answer was lost (a 500 after the post,
// a connection cut, a worker killed) creates no second message. The
// window is Discord's ("the past few minutes"): a retry later than that
// posts again, which the activities' store lookup (sentBefore) makes
// rare.
//
// Every message pings no one (allowed_mentions with an empty parse list
// and replied_user false: no @everyone, @here, role or user, whatever
// the model wrote), and a reply quotes its message softly
// (fail_if_not_exists: false), so a deleted message does not fail the
// send. Content is Render's: Discord renders Markdown itself, only
// headings past ### become bold lines; rendering never lengthens a chunk,
// so the workflow's pipeline.Chunk at 2,000 holds (fit cuts anything
// longer with "…" and logs it, rather than have Discord refuse it).
//
// Retries belong to Temporal: discordgo's own are off
// (ShouldRetryOnRateLimit false, MaxRestRetries 0, so a 502 is not sent
// again either). A 429 becomes adapters.RateLimited with Discord's
// retry_after. discordgo also waits by itself before a call whose
// rate-limit bucket is spent, with a time.Sleep no context can cancel
// (Ratelimiter.LockBucketObject), up to a whole 429's retry_after. The
// client never lets it: it takes the bucket itself (one call per bucket
// at a time, waiting for its turn with the context) and reads the wait
// discordgo would sleep; a wait up to maxInlineWait is slept here,
// cancellably, a longer one (a 429's, a global limit) answers
// RateLimited at once without a call, so the activity's retry waits it
// out; then the call goes through RequestWithLockedBucket, which neither
// sleeps nor retries.
//
// Before that, every call draws on the channel's delivery budget
// (adapters/internal/budget): one call of the bot's second (35, of
// Discord's 50), and
// its channel's turn, finals first (adapters.PriorityOf). A preview's
// edit or typing goes only when its route's bucket keeps a call for a
// reply (Remaining of at least two) and nothing of higher priority
// waits; otherwise it is skipped (adapters.ErrSkipped). Reactions are
// spaced 300 ms in a channel. An edit to what the message already shows
// is not sent.
//
// Keys: the session's Chat is the guild text channel or the DM channel
// (a thread's parent for messages in a thread) and Account the bot's
// user ID; a Delivery's, ReactionChange's or Edit's ThreadID is the
// thread's channel ID when the message is in a thread. So every call
// goes to ThreadID when set, else to Chat.
//
// A Delivery with PrivateVia (the interaction token of a button press)
// is shown to the presser alone: an ephemeral follow-up (flags 64)
// through the interaction's webhook, valid 15 minutes, which needs the
// application's ID (ClientConfig.ApplicationID, else asked once). A
// follow-up has no nonce: one retried after a lost answer may show
// twice, to that one user. Until the gateway has answered the press the
// webhook does not exist yet: the follow-up is tried again for a few
// seconds; past its 15 minutes (or with the wrong application) the text
// is posted in the channel as a reply instead. PrivateTo without a token
// is an ordinary message.
package discord
