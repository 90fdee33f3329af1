package telegram

import (
	"errors"
	"strings"
	"time"

	"github.com/go-telegram/bot"

	"github.com/replyflow/replyflow/adapters"
)

// Bot API descriptions the adapter acts on. Telegram documents none of
// them as stable codes, so they are matched as substrings, case-blind.
const (
	descCannotParse  = "can't parse entities"
	descNotModified  = "message is not modified"
	descReactInvalid = "reaction_invalid"
)

// descIs reports whether a Bot API error's description contains want.
func descIs(err error, want string) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), want)
}

// notFound reports a target message that no longer exists (deleted by a
// user or an admin): nothing is left to react to or edit.
func notFound(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) &&
		(descIs(err, "message to react not found") || descIs(err, "message_id_invalid") ||
			descIs(err, "message to edit not found") || descIs(err, "message not found"))
}

// opEdit is the Bot API method of an edit.
const opEdit = "editMessageText"

// classify maps a Bot API failure to the adapters taxonomy: 429 waits for
// retry_after; a bad request, a bot kicked from the chat, a revoked token
// or a migrated chat will not succeed on retry; anything else (5xx,
// network) might. An edit of a message that was deleted is also marked
// gone (adapters.Gone): the caller may send the text anew.
func classify(op string, err error) error {
	var tooMany *bot.TooManyRequestsError
	var migrated *bot.MigrateError
	switch {
	case op == opEdit && notFound(err):
		return adapters.Gone(&adapters.Error{Kind: adapters.Permanent, Op: op, Err: err})
	case errors.As(err, &tooMany):
		wait := time.Duration(tooMany.RetryAfter) * time.Second
		if wait <= 0 {
			wait = time.Second
		}
		return &adapters.Error{Kind: adapters.RateLimited, RetryAfter: wait, Op: op, Err: err}
	case errors.As(err, &migrated):
		return &adapters.Error{Kind: adapters.Permanent, Op: op, Err: err}
	case errors.Is(err, bot.ErrorUnauthorized):
		return &adapters.Error{Kind: adapters.Permanent, Op: op, Err: errors.New("the bot token was refused (check REPLYFLOW_TELEGRAM_TOKEN): " + err.Error())}
	case errors.Is(err, bot.ErrorForbidden):
		return &adapters.Error{Kind: adapters.Permanent, Op: op, Err: errors.New("the bot may not write here (removed from the chat, or blocked by the user): " + err.Error())}
	case errors.Is(err, bot.ErrorBadRequest), errors.Is(err, bot.ErrorNotFound):
		return &adapters.Error{Kind: adapters.Permanent, Op: op, Err: err}
	}
	return &adapters.Error{Kind: adapters.Transient, Op: op, Err: err}
}
