package discord

import (
	"encoding/json"
	"fmt"

	"github.com/bwmarrin/discordgo"
)

// Discord adds component types before discordgo knows them, and
// discordgo then fails on the whole message (also through a reply's
// referenced_message or a forward's snapshot) and hands on an empty one:
// a user's message would be lost for a field replyflow never reads.
// salvageMessage reads such a message once more with only the keys
// NormalizeMessage and the receiver read.

// salvageKeys are the keys of a message NormalizeMessage, the receiver
// and the catch-up read; TestSalvageKeepsWhatNormalizeReads holds them
// to NormalizeMessage.
var salvageKeys = []string{"id", "channel_id", "guild_id", "type", "content", "author", "member",
	"webhook_id", "attachments", "timestamp", "message_reference", "referenced_message",
	"embeds", "sticker_items"}

// referencedKeys are those read of a reply's referenced_message.
var referencedKeys = []string{"id", "author"}

// readMessage reads raw, one message as the gateway or the REST history
// sends it, as discordgo does; when discordgo fails on it, it reads it
// once more cut down to salvageKeys and returns discordgo's error as
// cause. err: it cannot be read even so (cause is then part of it).
func readMessage(raw json.RawMessage) (m *discordgo.Message, cause, err error) {
	if cause = json.Unmarshal(raw, &m); cause == nil && m != nil {
		return m, nil, nil
	}
	if cause == nil {
		return nil, nil, fmt.Errorf("message is %s", raw)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, cause, cause
	}
	cut := keep(obj, salvageKeys...)
	if ref, ok := object(cut["referenced_message"]); ok {
		cut["referenced_message"] = marshal(keep(ref, referencedKeys...))
	}
	m = nil
	if err := json.Unmarshal(marshal(cut), &m); err != nil || m == nil {
		return nil, cause, fmt.Errorf("%w; read again with only the fields replyflow uses: %v", cause, err)
	}
	return m, cause, nil
}

// stringField is raw's key when it reads as a string, else "": for a
// log line, and for the catch-up to move past a message it cannot read.
func stringField(raw json.RawMessage, key string) string {
	obj, ok := object(raw)
	if !ok {
		return ""
	}
	var v string
	_ = json.Unmarshal(obj[key], &v)
	return v
}

// keep is obj with only keys, those of them it has.
func keep(obj map[string]json.RawMessage, keys ...string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(keys))
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			out[k] = v
		}
	}
	return out
}

// object reads raw as a JSON object; false when it is none (null too).
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

// marshal encodes what was decoded from valid JSON, which does not fail;
// were it to, the value would read as null and the message as unreadable.
func marshal(v any) json.RawMessage {
	out, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return out
}
