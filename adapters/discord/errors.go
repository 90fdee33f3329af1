package discord

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
)

// The operations the client performs, as errors name them.
const (
	opSend        = "create message"
	opEdit        = "edit message"
	opGetMessage  = "get message"
	opReact       = "add reaction"
	opUnreact     = "remove reaction"
	opTyping      = "trigger typing"
	opFollowup    = "interaction follow-up"
	opApplication = "get application"
)

// Discord's JSON error codes the adapter acts on.
const (
	codeUnknownChannel     = 10003
	codeUnknownMessage     = 10008
	codeUnknownEmoji       = 10014
	codeUnknownWebhook     = 10015
	codeUnknownInteraction = 10062
	codeMissingAccess      = 50001
	codeCannotDM           = 50007
	codeMissingPermissions = 50013
	codeInvalidForm        = 50035
	codeArchivedThread     = 50083
	codeLockedThread       = 160005
)

// permissionFor is what a 50013 Missing Permissions asks to grant, per
// operation.
var permissionFor = map[string]string{
	opSend:       "Send Messages (and Send Messages in Threads for a thread; Read Message History to quote the message answered)",
	opEdit:       "Send Messages",
	opGetMessage: "Read Message History",
	opReact:      "Add Reactions and Read Message History",
	opUnreact:    "Read Message History",
	opTyping:     "Send Messages",
}

// hints are what to do about the codes no retry can pass.
var hints = map[int]string{
	codeUnknownChannel:     "the channel or thread is gone, or the bot is not in its server",
	codeUnknownMessage:     "the message is gone (deleted)",
	codeUnknownEmoji:       "Discord does not know the emoji: check REPLYFLOW_DISCORD_REACTIONS (a Unicode emoji, or name:id of a custom one)",
	codeUnknownWebhook:     "the interaction's token expired (15 minutes) or is another application's: check REPLYFLOW_DISCORD_APPLICATION_ID",
	codeUnknownInteraction: "the interaction expired",
	codeMissingAccess:      "the bot cannot see this channel: give its role View Channel there (and add it to a private thread)",
	codeCannotDM:           "the user does not accept direct messages from the bot (server privacy settings), or blocked it",
	50005:                  "the message is not the bot's",
	50006:                  "the message is empty",
	50008:                  "the channel is not a text channel",
	50024:                  "the action is not possible in this type of channel",
	codeInvalidForm:        "Discord refused the request's fields (see its errors)",
	codeArchivedThread:     "the thread is archived: unarchive it",
	codeLockedThread:       "the thread is locked: a moderator must unlock it",
	30010:                  "the message has the most reactions Discord allows",
	90001:                  "the user blocked the bot's reactions",
}

// badGatewayPrefix opens discordgo's error for a 502, which is no
// RESTError.
const badGatewayPrefix = "Exceeded Max retries "

// classify maps a failed call to the adapters taxonomy, with what to do
// in its message. bucket is the call's rate-limit bucket (named on a
// 429); secret, when set, is a token in the call's URL, removed from the
// message (a network error quotes the URL). Discord answers:
//   - 429: RateLimited after its retry_after (1s when it gives none);
//   - 5xx (and 502, which discordgo does not retry here: MaxRestRetries
//     is 0) and 408: Transient;
//   - 401: Permanent, the token is wrong;
//   - 403 Missing Access or Missing Permissions: Permanent, naming what
//     to grant;
//   - any other 4xx (Unknown Channel, Invalid Form Body, …): Permanent;
//
// and a network error or an answer cut off is Transient. An edit answered
// 10008 Unknown Message (the message was deleted) is also marked gone
// (adapters.Gone): the caller may send the text anew.
func classify(op, bucket string, err error, secret string) error {
	var limited *discordgo.RateLimitError
	var rest *discordgo.RESTError
	kind, wait, text := adapters.Transient, time.Duration(0), strings.TrimSpace(err.Error())
	switch {
	case errors.As(err, &limited):
		kind, wait = adapters.RateLimited, time.Second
		message := "You are being rate limited."
		if limited.TooManyRequests != nil {
			message = limited.Message
			if limited.RetryAfter > 0 {
				wait = limited.RetryAfter
			}
		}
		text = fmt.Sprintf("Discord answered 429 on the bucket %s: %s", bucketName(bucket), message)
	case errors.As(err, &rest) && rest.Response != nil:
		var hint string
		kind, hint = restKind(op, rest)
		if hint != "" {
			text += " (" + hint + ")"
		}
	case strings.HasPrefix(text, badGatewayPrefix):
		// discordgo's answer to a 502 it did not retry (MaxRestRetries 0).
		text = "Discord answered " + strings.TrimPrefix(text, badGatewayPrefix)
	default:
		text = "Discord unreachable or the answer was cut off: " + text
	}
	if secret != "" {
		text = strings.ReplaceAll(text, secret, "<token>")
	}
	classified := &adapters.Error{Kind: kind, RetryAfter: wait, Op: op, Err: &explained{text: text, err: err}}
	if op == opEdit && codeOf(err) == codeUnknownMessage {
		// The message to edit was deleted: the caller may send the
		// text anew.
		return adapters.Gone(classified)
	}
	return classified
}

// restKind is the kind of a REST error and what to do about it.
func restKind(op string, rest *discordgo.RESTError) (adapters.ErrorKind, string) {
	status, code := rest.Response.StatusCode, restCode(rest)
	switch {
	case status >= 500 || status == http.StatusRequestTimeout:
		return adapters.Transient, ""
	case status == http.StatusUnauthorized:
		return adapters.Permanent, "Discord refused the bot token: check REPLYFLOW_DISCORD_TOKEN (the token on the application's Bot page)"
	case code == codeMissingPermissions:
		perm := permissionFor[op]
		if perm == "" {
			perm = "the permission the action needs"
		}
		return adapters.Permanent, "the bot lacks a permission here: grant its role " + perm + " in this channel"
	case hints[code] != "":
		return adapters.Permanent, hints[code]
	case status == http.StatusForbidden:
		return adapters.Permanent, "the bot may not do this here: check its role's permissions in this channel"
	}
	return adapters.Permanent, ""
}

// restCode is Discord's JSON error code of err, 0 when there is none.
func restCode(rest *discordgo.RESTError) int {
	if rest.Message == nil {
		return 0
	}
	return rest.Message.Code
}

// codeOf is Discord's JSON error code of a failed call, 0 when it is
// not an error Discord answered.
func codeOf(err error) int {
	var rest *discordgo.RESTError
	if errors.As(err, &rest) {
		return restCode(rest)
	}
	return 0
}

// bucketName is a bucket as a route, without the API's address.
func bucketName(bucket string) string {
	return strings.TrimPrefix(bucket, discordgo.EndpointAPI)
}

// explained is a failure's text (with no token in it) over the error
// it explains.
type explained struct {
	text string
	err  error
}

func (c *explained) Error() string { return c.text }
func (c *explained) Unwrap() error { return c.err }
