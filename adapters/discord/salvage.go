package discord

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters/internal/rawjson"
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
	obj, ok := rawjson.Object(raw)
	if !ok {
		return nil, cause, cause
	}
	cut := rawjson.Keep(obj, salvageKeys...)
	if ref, ok := rawjson.Object(cut["referenced_message"]); ok {
		cut["referenced_message"] = rawjson.Marshal(rawjson.Keep(ref, referencedKeys...))
	}
	m = nil
	if err := json.Unmarshal(rawjson.Marshal(cut), &m); err != nil || m == nil {
		if err == nil {
			err = errors.New("it holds no message")
		}
		return nil, cause, fmt.Errorf("%w; read again with only the fields replyflow uses: %v", cause, err)
	}
	return m, cause, nil
}

// stringField is raw's key when it reads as a string, else "": for a
// log line, and for the catch-up to move past a message it cannot read.
func stringField(raw json.RawMessage, key string) string {
	obj, _ := rawjson.Object(raw)
	return rawjson.String(obj[key])
}
