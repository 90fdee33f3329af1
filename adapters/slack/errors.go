package slack

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"

	"github.com/replyflow/replyflow/adapters"
)

// permanentCodes are Slack ok:false codes no retry can pass: the bot is
// not where it posts, its token or scopes are wrong, or the request
// itself is refused. Other codes (internal_error, fatal_error,
// request_timeout, service_unavailable, team_added_to_org, …) may pass.
var permanentCodes = map[string]string{
	"channel_not_found":                        "the channel is gone or the bot cannot see it",
	"not_in_channel":                           "invite the bot to the channel (/invite @bot)",
	"is_archived":                              "the channel is archived",
	"thread_not_found":                         "the thread's parent is gone",
	"message_not_found":                        "the message is gone",
	"cant_update_message":                      "the message is not the bot's",
	"edit_window_closed":                       "the workspace no longer allows editing this message",
	"msg_too_long":                             "the chunk is over Slack's limit (check the chunking limit)",
	"msg_blocks_too_long":                      "the blocks are over Slack's limit",
	"no_text":                                  "the chunk is empty",
	"invalid_blocks":                           "Slack refused the blocks",
	"invalid_blocks_format":                    "Slack refused the blocks",
	"invalid_metadata_format":                  "Slack refused the message metadata",
	"invalid_metadata_schema":                  "Slack refused the message metadata",
	"restricted_action":                        "the workspace forbids the bot to post here",
	"restricted_action_read_only_channel":      "the channel is read-only",
	"restricted_action_thread_only_channel":    "the channel only allows thread replies",
	"restricted_action_non_threadable_channel": "the channel allows no threads",
	"cannot_reply_to_message":                  "Slack forbids replies to that message",
	"invalid_auth":                             "the bot token was refused (check REPLYFLOW_SLACK_BOT_TOKEN)",
	"not_authed":                               "no bot token was sent (set REPLYFLOW_SLACK_BOT_TOKEN)",
	"account_inactive":                         "the bot's token was revoked or its user deactivated",
	"token_revoked":                            "the bot token was revoked (reinstall the app)",
	"token_expired":                            "the bot token expired (rotate it)",
	"no_permission":                            "the token lacks a permission here",
	"missing_scope":                            "add the missing scope to the Slack app and reinstall it",
	"not_allowed_token_type":                   "use the bot token (xoxb-)",
	"ekm_access_denied":                        "the workspace's key management denied access",
	"team_access_not_granted":                  "the workspace has not granted the app access",
	"invalid_name":                             "the reaction's shortcode is not an emoji here (check the reaction map)",
	"too_many_reactions":                       "the message has too many reactions",
	"too_many_emoji":                           "the message has too many reactions",
	"invalid_arguments":                        "Slack refused the call's arguments",
	"unknown_method":                           "the Slack API does not know the method",
}

// opUpdate is the Web API method of an edit.
const opUpdate = "chat.update"

// classify maps a slack-go failure to the adapters taxonomy: 429 waits
// for Retry-After; an ok:false code that cannot pass by retrying is
// permanent, with what to do; anything else (other codes, 5xx, network)
// is transient, so the activity's retry policy, not a guess, gives up.
func classify(op string, err error) error {
	var limited *slack.RateLimitedError
	var slackErr slack.SlackErrorResponse
	var status slack.StatusCodeError
	switch {
	case errors.As(err, &limited):
		wait := limited.RetryAfter
		if wait <= 0 {
			wait = time.Second
		}
		return &adapters.Error{Kind: adapters.RateLimited, RetryAfter: wait, Op: op, Err: err}
	case errors.As(err, &slackErr):
		if hint, ok := permanentCodes[slackErr.Err]; ok {
			classified := &adapters.Error{Kind: adapters.Permanent, Op: op, Err: fmt.Errorf("%w (%s)", err, hint)}
			if op == opUpdate && slackErr.Err == "message_not_found" {
				// The message to edit was deleted: the caller may
				// send the text anew.
				return adapters.Gone(classified)
			}
			return classified
		}
	case errors.As(err, &status):
		if status.Code >= 400 && status.Code < 500 && status.Code != http.StatusRequestTimeout {
			return &adapters.Error{Kind: adapters.Permanent, Op: op, Err: err}
		}
	}
	return &adapters.Error{Kind: adapters.Transient, Op: op, Err: err}
}

// slackCode is the ok:false code of err, or "".
func slackCode(err error) string {
	var slackErr slack.SlackErrorResponse
	if errors.As(err, &slackErr) {
		return slackErr.Err
	}
	return ""
}
