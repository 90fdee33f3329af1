package slack

import (
	"encoding/json"
	"fmt"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/replyflow/replyflow/adapters/internal/rawjson"
)

// Slack adds block types and changes a field's JSON type before slack-go
// follows, and slack-go then fails on the whole event: a user's message
// would be lost for a field replyflow never reads. salvage reads such an
// event once more with only the keys Normalize reads.

// salvageKeys are, for each inner event type Normalize handles, the keys
// it and its helpers (messageEvent, mentionEvent, reactionEvent,
// postEvent, mediaOf) read; "type" picks slack-go's struct. A message
// event's post is at its top level, or in message (message_changed).
// TestSalvageKeepsWhatNormalizeReads holds them to Normalize.
var salvageKeys = map[string][]string{
	"message": {"type", "subtype", "channel", "channel_type", "bot_id",
		"user", "username", "text", "ts", "thread_ts", "parent_user_id", "files",
		"message", "previous_message"},
	"app_mention":    {"type", "channel", "user", "bot_id", "text", "ts", "thread_ts", "files"},
	"reaction_added": {"type", "user", "reaction", "item", "event_ts"},
}

var (
	// editedKeys are those read of a message_changed's message.
	editedKeys = []string{"user", "bot_id", "username", "text", "ts", "thread_ts", "parent_user_id", "files"}
	// previousKeys are those read of a message_changed's previous_message.
	previousKeys = []string{"text"}
	// itemKeys are those read of a reaction's item.
	itemKeys = []string{"type", "channel", "ts"}
	// fileKeys are those mediaOf reads of a file.
	fileKeys = []string{"id", "name", "mimetype", "media_display_type"}
)

// Salvage tells how an event slack-go could not read whole was read all
// the same. It names the event, never its content.
type Salvage struct {
	Type    string // the inner event's type
	EventID string // "" for a message of a conversation's history
	Cause   error  // slack-go's error on the whole event
	// FilesLeftOut: some or all of the event's files could not be read
	// either, even cut down to what mediaOf reads, and are left out.
	FilesLeftOut bool
}

// salvage reads body, an Events API body slack-go failed on with cause,
// once more: the envelope as it is, its inner event cut down to the keys
// Normalize reads (salvageKeys), each file to what mediaOf reads, and a
// file slack-go cannot read even so left out. It returns cause, and the
// event is dropped as before, when the body is no event_callback of a
// type Normalize handles or the keys kept cannot be read either (a ts
// that is no string). It parses at most once, whatever the body holds.
func salvage(body []byte, cause error) (slackevents.EventsAPIEvent, *Salvage, error) {
	env, ok := rawjson.Object(body)
	if !ok || rawjson.String(env["type"]) != slackevents.CallbackEvent {
		return slackevents.EventsAPIEvent{}, nil, cause
	}
	inner, ok := rawjson.Object(env["event"])
	if !ok {
		return slackevents.EventsAPIEvent{}, nil, cause
	}
	typ := rawjson.String(inner["type"])
	keys, ok := salvageKeys[typ]
	if !ok {
		return slackevents.EventsAPIEvent{}, nil, cause
	}
	cut, filesLeftOut := cutEvent(inner, keys)
	s := &Salvage{Type: typ, EventID: rawjson.String(env["event_id"]), Cause: cause, FilesLeftOut: filesLeftOut}
	env["event"] = rawjson.Marshal(cut)
	ev, err := slackevents.ParseEvent(rawjson.Marshal(env), slackevents.OptionNoVerifyToken())
	if err != nil {
		return ev, nil, fmt.Errorf("%w; read again with only the fields replyflow uses: %v", cause, err)
	}
	return ev, s, nil
}

// cutEvent is inner, an inner event, with only keys (its type's
// salvageKeys), those of its message, previous_message and item that
// Normalize reads, and each file cut down to what mediaOf reads, a file
// slack-go cannot read even so left out (filesLeftOut).
func cutEvent(inner map[string]json.RawMessage, keys []string) (cut map[string]json.RawMessage, filesLeftOut bool) {
	cut = rawjson.Keep(inner, keys...)
	filesLeftOut = readableFiles(cut)
	if edited, ok := rawjson.Object(cut["message"]); ok {
		edited = rawjson.Keep(edited, editedKeys...)
		filesLeftOut = readableFiles(edited) || filesLeftOut
		cut["message"] = rawjson.Marshal(edited)
	}
	if previous, ok := rawjson.Object(cut["previous_message"]); ok {
		cut["previous_message"] = rawjson.Marshal(rawjson.Keep(previous, previousKeys...))
	}
	if item, ok := rawjson.Object(cut["item"]); ok {
		cut["item"] = rawjson.Marshal(rawjson.Keep(item, itemKeys...))
	}
	return cut, filesLeftOut
}

// salvageMessage reads raw, a message of a conversation's history that
// slack-go failed on with cause, once more, cut down as a message
// event's inner event is (salvageKeys["message"], cutEvent): the
// catch-up hands it on as its live event, read the same way, would be.
// It returns cause, with why, when the keys kept cannot be read either
// (a ts that is no string) or raw is no object.
func salvageMessage(raw json.RawMessage, cause error) (slack.Message, *Salvage, error) {
	obj, ok := rawjson.Object(raw)
	if !ok {
		return slack.Message{}, nil, cause
	}
	cut, filesLeftOut := cutEvent(obj, salvageKeys["message"])
	var m slack.Message
	if err := json.Unmarshal(rawjson.Marshal(cut), &m); err != nil {
		return slack.Message{}, nil, fmt.Errorf("%w; read again with only the fields replyflow uses: %v", cause, err)
	}
	return m, &Salvage{Type: "message", Cause: cause, FilesLeftOut: filesLeftOut}, nil
}

// readableFiles cuts each of post's files down to fileKeys and leaves
// out those slack-go still cannot read; it reports whether it left out
// any (all of them when files is no array).
func readableFiles(post map[string]json.RawMessage) (leftOut bool) {
	raw, ok := post["files"]
	if !ok {
		return false
	}
	var files []json.RawMessage
	if json.Unmarshal(raw, &files) != nil {
		delete(post, "files")
		return true
	}
	kept := make([]json.RawMessage, 0, len(files))
	for _, f := range files {
		if obj, ok := rawjson.Object(f); ok {
			f = rawjson.Marshal(rawjson.Keep(obj, fileKeys...))
		}
		var probe slack.File
		if json.Unmarshal(f, &probe) != nil {
			leftOut = true
			continue
		}
		kept = append(kept, f)
	}
	post["files"] = rawjson.Marshal(kept)
	return leftOut
}
