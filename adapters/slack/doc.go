// Package slack is replyflow's Slack adapter, shaped like the Telegram
// one. It is the only code in replyflow that imports
// github.com/slack-go/slack; it must not import Temporal or the workflows,
// and is reached through the adapters contract only.
//
// What it holds: VerifyRequest checks an Events API request's signature;
// Parse and Normalize turn an Events API envelope (from HTTP, or Socket
// Mode, which carries the same envelope) into a pipeline.Inbound, a
// pipeline.Feedback or a reason to skip; Place puts a message in its lane
// and its reply in its thread; Client is the outbound side
// (adapters.Outbound, see below), which renders each chunk with
// its package mrkdwn (the workflow already cut the reply with
// mrkdwn.Chunk, so each chunk fits Slack's limit once rendered; Platform
// is the adapters.Chunker that cuts with it outside the workflow). Receiver hands events
// to the gateway's Sink, over Socket Mode
// (RunSocket) or the Events API and interactivity URLs (EventsHandler,
// InteractivityHandler); Platform holds the REPLYFLOW_SLACK_* settings
// and starts one of them (Serve). The fake server is slacktest.
//
// Acks: an event is acked (an envelope's ack, an HTTP 200) only after the
// Sink accepted it; otherwise it stays unacked (503 over HTTP) and Slack
// delivers it again, and the session drops what it already has. A signed
// event slack-go cannot read is acked and logged instead, or Slack would
// send it again and again; so is an event the gateway's rate limits
// dropped (adapters.RateLimitedError), whose sender gets the gateway's
// slow-down notice through Notify. A button press (block_actions) is an
// Inbound whose Action is the button's value and whose ReplyTo is the
// message that carried it. A Socket Mode connection without a ping from Slack
// (sent every few seconds, events or not) for
// REPLYFLOW_SLACK_SOCKET_STALE_AFTER is closed by slack-go's watchdog
// before a new one opens.
//
// Keys: the session is the workspace's channel (account = team ID, chat =
// channel ID). The lane of a message is the Slack thread its reply goes
// in, and Place computes both from one value, so the client posts a
// Delivery with thread_ts = its ThreadID and a reply never leaves its
// thread. In channels and group DMs the reply goes in the message's
// thread (thread_ts, else the message's own ts); in a one-to-one DM, a
// top-level message is answered top-level (REPLYFLOW_SLACK_REPLY_IN_THREAD
// =threaded, the default) or in a thread under it (=always), and a
// threaded one in its thread. A thread reply's ReplyTo is the thread's
// parent, and it counts as addressed to the bot (ReplyToBot) when the bot
// started the thread.
//
// Redeliveries: a message's ID is its ts, unique in its channel, so an
// HTTP retry (X-Slack-Retry-Num), a Socket Mode replay and the two events
// Slack sends for one post that mentions the bot (message and
// app_mention) all become one MessageID, and the session's dedupe keeps
// the first. For that to lose nothing, the first must already say the bot
// was mentioned: Normalize reads the mention from the text (<@BOTID>),
// which both twins carry, instead of from the event type, so the twins
// are the same Inbound and the gateway needs to hold no event back.
// MergeTwins exists for a caller that does hold both; it keeps the
// mention. The bot's mentions are stripped from the text before commands
// are parsed ("<@B> /status" is "/status"), and Slack's escapes (&amp;
// &lt; &gt;) are decoded; other mentions stay as <@U123>.
//
// Skipped, with a reason: the bot's own messages (its user ID or bot ID,
// from auth.test), joins, topic and purpose changes and every other
// subtype that is not someone's message (the allowed ones are plain,
// file_share, thread_broadcast, me_message and other bots' bot_message),
// deletions, reactions on anything but messages, and the bot's own
// reactions.
//
// Edits (message_changed) keep the original message's ts, so the
// session's dedupe drops them as Telegram's edits are dropped: what was
// answered stays answered, and an edit reaches the session only when the
// original never did (sent before the bot joined, or out of the seen
// ring). Changes that edit no text (link unfurls, a thread's reply count)
// are skipped, so an old thread's parent is never answered again.
// Deletions are skipped: a deleted message that was answered stays
// answered.
//
// Files (file_share) arrive as pipeline.Media references: the file ID and
// name, never the bytes, which stay with Slack until a tool fetches them.
// At most pipeline.MaxMedia files are kept; a text over
// pipeline.MaxTextBytes is cut with a visible mark, so the model knows.
//
// Reactions (reaction_added on a message) become Feedback on the message
// with the reacted ts; Emoji holds the one added, as Slack names it
// (":thumbsup:"), not the user's whole set, which Slack does not send.
// reaction_removed is not handled yet.
//
// Outbound (Client): Send posts a chunk with chat.postMessage in the
// session's channel, with thread_ts = the Delivery's ThreadID (top-level
// when it is empty), as mrkdwn (Slack's default, never turned off), link
// unfurls off, and message metadata {event_type: "replyflow_chunk",
// event_payload: {key: IdempotencyKey}}. A chunk with buttons (a
// proposal) also carries Block Kit: its text in mrkdwn sections and an
// actions block whose buttons have action_id = value = the button's
// Action. Edit is chat.update of text and blocks; without buttons the
// blocks are cleared, so a decided proposal loses its buttons.
//
// No duplicate posts: Slack has no idempotency key, and an activity
// whose answer was lost runs again, maybe on another worker. So before
// every post (the Delivery does not say whether it is a retry, and no
// cheap signal does) Send looks for a message of the bot with the chunk's
// key in its metadata: in the thread (conversations.replies, the window's
// first 200 messages) or among the channel's 20 newest top-level messages
// (conversations.history), both within DedupeWindow (15 minutes), and
// returns its ts instead of posting. A chunk this worker posted is found
// in memory (4,096 keys) without a call. What remains possible: a post
// Slack accepted but does not list yet when the retry looks (the retry
// follows a timeout, so this needs Slack to be slower than the activity's
// retry backoff); a retry later than the window, or one that finds the
// first post pushed out of the 20 (or 200) messages looked at; and a post
// deleted in between, which is posted again. A lookup that fails fails
// the Send (classified as any call) rather than post blind. The lookup
// is one read per chunk (Tier 3 for an internal app). Check the read
// limits that apply to your app's distribution: where Slack allows only a
// few conversations.history/replies calls a minute, this lookup would
// throttle every post (not verified here; it is the first thing to check
// before running a distributed app).
//
// Errors: slack-go's RateLimitedError is RateLimited with its
// Retry-After, and the channel's posts are then refused here until it
// passes; ok:false codes that no retry passes (channel_not_found,
// not_in_channel, invalid_auth, msg_too_long, missing_scope, … see
// permanentCodes) are Permanent with what to do; other codes, 5xx and
// network failures are Transient. slack-go's retries are off (no
// OptionRetry): the activities' retry policy retries. Posts are paced at
// one a second per channel (chat.postMessage's limit).
//
// Reactions: Slack adds reactions per user instead of replacing them, so
// SetReaction removes the shortcode the bot set before adding the state's
// (eyes, writing_hand, hourglass_flowing_sand, white_check_mark, x;
// ClientConfig.Shortcodes overrides them); already_reacted and
// no_reaction count as success. What the bot set is kept in memory
// (10,000 messages, oldest forgotten); a worker that does not know the
// message removes every other lifecycle shortcode instead (not for
// "received", the first state). Typing shows an assistant status ("is
// thinking…", assistant.threads.setStatus) in threads only, best effort
// (a workspace without the feature refuses it: logged at debug), and
// Send clears it after a reply's last chunk.
//
// Member counts: the receiver attaches each channel message's member
// count (conversations.info's num_members, less the bot; cached a minute
// per channel) for the engagement rules, so a channel where one person
// speaks is still treated as a group.
package slack
