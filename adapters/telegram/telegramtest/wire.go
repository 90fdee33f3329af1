package telegramtest

import "time"

// The Bot API's JSON, as Telegram writes it. The fake writes its own wire
// types rather than the SDK's models, so that the adapter is tested
// against the protocol and not against the SDK's reading of it.

type wireUser struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

type wireChat struct {
	ID      int64  `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title,omitempty"`
	IsForum bool   `json:"is_forum,omitempty"`
}

type wireEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

type wirePhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
}

type wireDocument struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
}

type wireVoice struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Duration     int    `json:"duration"`
	MimeType     string `json:"mime_type,omitempty"`
}

type wireFile struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int64  `json:"file_size,omitempty"`
	FilePath     string `json:"file_path,omitempty"`
}

type wireButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
}

type wireMarkup struct {
	InlineKeyboard [][]wireButton `json:"inline_keyboard"`
}

type wireMessage struct {
	MessageID         int             `json:"message_id"`
	MessageThreadID   int             `json:"message_thread_id,omitempty"`
	IsTopicMessage    bool            `json:"is_topic_message,omitempty"`
	From              *wireUser       `json:"from,omitempty"`
	Chat              wireChat        `json:"chat"`
	Date              int64           `json:"date"`
	EditDate          int64           `json:"edit_date,omitempty"`
	ReplyToMessage    *wireMessage    `json:"reply_to_message,omitempty"`
	Text              string          `json:"text,omitempty"`
	Entities          []wireEntity    `json:"entities,omitempty"`
	Caption           string          `json:"caption,omitempty"`
	CaptionEntities   []wireEntity    `json:"caption_entities,omitempty"`
	Photo             []wirePhotoSize `json:"photo,omitempty"`
	Document          *wireDocument   `json:"document,omitempty"`
	Voice             *wireVoice      `json:"voice,omitempty"`
	ReplyMarkup       *wireMarkup     `json:"reply_markup,omitempty"`
	ForumTopicCreated *struct {
		Name string `json:"name"`
	} `json:"forum_topic_created,omitempty"`
}

type wireReaction struct {
	Type  string `json:"type"`
	Emoji string `json:"emoji,omitempty"`
}

type wireMessageReaction struct {
	Chat        wireChat       `json:"chat"`
	MessageID   int            `json:"message_id"`
	User        *wireUser      `json:"user,omitempty"`
	Date        int64          `json:"date"`
	OldReaction []wireReaction `json:"old_reaction"`
	NewReaction []wireReaction `json:"new_reaction"`
}

type wireCallbackQuery struct {
	ID           string       `json:"id"`
	From         wireUser     `json:"from"`
	Message      *wireMessage `json:"message,omitempty"`
	ChatInstance string       `json:"chat_instance"`
	Data         string       `json:"data,omitempty"`
}

type wireUpdate struct {
	UpdateID        int64                `json:"update_id"`
	Message         *wireMessage         `json:"message,omitempty"`
	EditedMessage   *wireMessage         `json:"edited_message,omitempty"`
	CallbackQuery   *wireCallbackQuery   `json:"callback_query,omitempty"`
	MessageReaction *wireMessageReaction `json:"message_reaction,omitempty"`
	// queued is when the update was made, by the fake's clock: it is
	// dropped updateRetention later if still unconfirmed.
	queued time.Time
}

// kind is the update's type as allowed_updates names it.
func (u wireUpdate) kind() string {
	switch {
	case u.Message != nil:
		return "message"
	case u.EditedMessage != nil:
		return "edited_message"
	case u.CallbackQuery != nil:
		return "callback_query"
	case u.MessageReaction != nil:
		return "message_reaction"
	}
	return ""
}

type wireResponse struct {
	OK          bool            `json:"ok"`
	Result      any             `json:"result,omitempty"`
	ErrorCode   int             `json:"error_code,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  *wireParameters `json:"parameters,omitempty"`
}

type wireParameters struct {
	RetryAfter int `json:"retry_after,omitempty"`
}
