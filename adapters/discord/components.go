package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// Discord's limits on message components.
const (
	maxCustomID     = 100 // characters of a button's custom_id
	maxLabel        = 80  // characters of a button's label
	buttonsPerRow   = 5
	rowsPerMessage  = 5
	ephemeralFlag   = 64 // MESSAGE_FLAGS_EPHEMERAL
	maxButtonsTotal = buttonsPerRow * rowsPerMessage
)

// messageBody is a message as create, edit and the interaction webhook
// take it. discordgo's MessageSend has no nonce field, hence this type.
type messageBody struct {
	Content          string                            `json:"content"`
	Nonce            string                            `json:"nonce,omitempty"`
	EnforceNonce     bool                              `json:"enforce_nonce,omitempty"`
	MessageReference *discordgo.MessageReference       `json:"message_reference,omitempty"`
	AllowedMentions  *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	// Components is nil to leave a message's components as they are, and
	// points to an empty list to remove them.
	Components *[]discordgo.MessageComponent `json:"components,omitempty"`
	Flags      int                           `json:"flags,omitempty"`
}

// noMentions lets the content ping nobody: not @everyone or @here, no
// role, no user named in it (<@id> still shows as a mention), and not
// the author of the message replied to. Model text must never notify a
// server.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: false}
}

// softReply quotes messageID without failing the send when the message
// is gone (deleted since): Discord then sends it as a plain message.
func softReply(messageID string) *discordgo.MessageReference {
	if messageID == "" {
		return nil
	}
	fail := false
	return &discordgo.MessageReference{MessageID: messageID, FailIfNotExists: &fail}
}

// components are a message's buttons as action rows of five, each
// button's custom_id its Action (which names the proposal, as
// "approve:p1"; the session is the channel the press comes from).
// Approve is green and Reject red, anything else grey. An empty list for
// no buttons, so an edit clears them. An Action longer than Discord's
// 100 characters, or more than 25 buttons, is a permanent failure: it
// would be refused as an invalid form.
func components(op string, buttons []pipeline.Button) (*[]discordgo.MessageComponent, error) {
	rows := []discordgo.MessageComponent{}
	if len(buttons) > maxButtonsTotal {
		return nil, &adapters.Error{Kind: adapters.Permanent, Op: op,
			Err: fmt.Errorf("%d buttons: a Discord message holds at most %d", len(buttons), maxButtonsTotal)}
	}
	var row discordgo.ActionsRow
	for _, b := range buttons {
		if n := utf8.RuneCountInString(b.Action); n == 0 || n > maxCustomID {
			return nil, &adapters.Error{Kind: adapters.Permanent, Op: op,
				Err: fmt.Errorf("button %q: its action %q must be 1 to %d characters to be a Discord custom_id", b.Text, b.Action, maxCustomID)}
		}
		row.Components = append(row.Components, discordgo.Button{Label: label(b.Text), Style: buttonStyle(b.Action), CustomID: b.Action})
		if len(row.Components) == buttonsPerRow {
			rows, row = append(rows, row), discordgo.ActionsRow{}
		}
	}
	if len(row.Components) > 0 {
		rows = append(rows, row)
	}
	return &rows, nil
}

func buttonStyle(action string) discordgo.ButtonStyle {
	decision, _, _ := pipeline.ParseAction(action)
	switch decision {
	case pipeline.DecisionApprove:
		return discordgo.SuccessButton
	case pipeline.DecisionReject:
		return discordgo.DangerButton
	}
	return discordgo.SecondaryButton
}

// label keeps a button's text within Discord's 80 characters.
func label(text string) string {
	if utf8.RuneCountInString(text) <= maxLabel {
		return text
	}
	return string([]rune(text)[:maxLabel-1]) + "…"
}

// errNoWebhook: Discord does not know the interaction's webhook (the
// token expired, or is another application's).
var errNoWebhook = errors.New("no webhook for the interaction")

// sendPrivate shows d to the presser alone, as an ephemeral follow-up
// through the interaction's webhook (PrivateVia is its token), and
// returns the ephemeral message's ID. Until the gateway has answered the
// press, Discord knows no webhook for it (10015): it is tried again
// after each of followupRetries. If Discord still does not know it, it
// answers errNoWebhook and Send posts in the channel instead.
func (c *Client) sendPrivate(ctx context.Context, d pipeline.Delivery, content string, rows *[]discordgo.MessageComponent) (string, error) {
	if id, ok := c.ephemerals.Get(d.IdempotencyKey); ok {
		return id, nil
	}
	app, err := c.applicationID(ctx)
	if err != nil {
		return "", err
	}
	body := messageBody{Content: content, AllowedMentions: noMentions(), Flags: ephemeralFlag}
	if len(d.Buttons) > 0 {
		body.Components = rows
	}
	r := request{op: opFollowup, method: http.MethodPost, url: discordgo.EndpointWebhookToken(app, d.PrivateVia) + "?wait=true",
		bucket: discordgo.EndpointWebhookToken(app, ""), body: body, secret: d.PrivateVia, wait: true}
	var m discordgo.Message
	for attempt := 0; ; attempt++ {
		err = c.call(ctx, r, &m)
		if code := codeOf(err); code != codeUnknownWebhook && code != codeUnknownInteraction {
			break
		}
		if attempt == len(c.followupRetries) {
			return "", errNoWebhook
		}
		if err := sleep(ctx, c.followupRetries[attempt]); err != nil {
			return "", &adapters.Error{Kind: adapters.Transient, Op: opFollowup, Err: err}
		}
	}
	if err != nil {
		return "", err
	}
	c.ephemerals.Put(d.IdempotencyKey, m.ID)
	return m.ID, nil
}

// applicationID is the application's ID: the configured one, else
// Discord's answer to GET /applications/@me, else (where that route is
// not served: a 404 without a code) the bot's user ID, which
// applications made since 2020 share. It is asked until Discord answers
// (two follow-ups at once may both ask).
func (c *Client) applicationID(ctx context.Context) (string, error) {
	c.appMu.Lock()
	known := c.appID
	c.appMu.Unlock()
	if known != "" {
		return known, nil
	}
	var me struct {
		ID string `json:"id"`
	}
	err := c.call(ctx, request{op: opApplication, method: http.MethodGet, url: discordgo.EndpointApplication("@me"),
		bucket: discordgo.EndpointApplications, wait: true}, &me)
	var rest *discordgo.RESTError
	if errors.As(err, &rest) && rest.Response.StatusCode == http.StatusNotFound && restCode(rest) == 0 {
		err = c.call(ctx, request{op: opApplication, method: http.MethodGet, url: discordgo.EndpointUser("@me"),
			bucket: discordgo.EndpointUsers, wait: true}, &me)
	}
	if err != nil {
		return "", err
	}
	if me.ID == "" {
		return "", &adapters.Error{Kind: adapters.Transient, Op: opApplication, Err: errors.New("Discord named no application ID")}
	}
	c.appMu.Lock()
	c.appID = me.ID
	c.appMu.Unlock()
	return me.ID, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
