package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// transcriptWindow is how many stored messages a prompt may look back on,
// before the token budget trims it: what the store keeps of a current
// transcript whatever its retention, so the retention never changes what
// the model sees.
const transcriptWindow = store.CurrentTranscriptKept

// Transcripts is the part of the store the activities use; *store.Store is
// the real one.
type Transcripts interface {
	SessionEntry(ctx context.Context, sessionID string) (store.Entry, error)
	SavedSettings(ctx context.Context, sessionID string) (store.Entry, error)
	SaveSettings(ctx context.Context, e store.Entry) error
	StartTranscript(ctx context.Context, sessionID, key string) (string, error)
	Append(ctx context.Context, transcriptID string, msgs []store.Message) error
	Recent(ctx context.Context, transcriptID string, limit int) ([]store.Message, error)
	MapMessage(ctx context.Context, sessionID, internalID, platformID string) error
	ClaimSend(ctx context.Context, sessionID, internalID string, until time.Time) (string, time.Time, error)
	ReleaseSend(ctx context.Context, sessionID, internalID string) error
	PlatformID(ctx context.Context, sessionID, internalID string) (string, bool, error)
	InternalID(ctx context.Context, sessionID, platformID string) (string, bool, error)
	AddFeedback(ctx context.Context, f store.Feedback) error
	Claim(ctx context.Context, code, who string) (bool, error)
	BurnClaimCode(ctx context.Context, code string) error
	Owners(ctx context.Context) ([]string, error)
	SaveToolResult(ctx context.Context, sessionID, turnID, callID, output string, isError bool) error
	ToolResults(ctx context.Context, sessionID, turnID string) (map[string]store.ToolResult, error)
	SaveShown(ctx context.Context, sessionID, turnID, shownJSON string) error
	Shown(ctx context.Context, sessionID, turnID string) (string, error)
	KeepExport(ctx context.Context, sessionID, key string, doc store.ExportDocument) (store.ExportDocument, error)
	Export(ctx context.Context, sessionID, key string) (store.ExportDocument, bool, error)
}

// transcript returns the session's transcript ID and recent messages,
// starting a new transcript first when the request asks for one.
func (a *Activities) transcript(ctx context.Context, req pipeline.TurnRequest) (string, []store.Message, error) {
	if a.Store == nil {
		return "", nil, nil
	}
	sessionID := req.Session.WorkflowID()
	var id string
	if req.NewTranscript {
		var err error
		if id, err = a.Store.StartTranscript(ctx, sessionID, req.TurnID); err != nil {
			return "", nil, err
		}
	} else {
		entry, err := a.Store.SessionEntry(ctx, sessionID)
		if err != nil {
			return "", nil, err
		}
		id = entry.TranscriptID
	}
	recent, err := a.Store.Recent(ctx, id, transcriptWindow)
	return id, recent, err
}

// prompt assembles what the model is asked: the persona and where and when
// the conversation happens, the transcript window that fits the token
// budget, and the new user turn, each user message in its envelope.
func (a *Activities) prompt(req pipeline.TurnRequest, history []store.Message, now time.Time) models.Prompt {
	system := a.systemText(req.Session, req.Group, now)
	last := lastMessage(req)
	current := pipeline.Envelope(a.envelope(req, last.SenderName, last.At, prevTime(history)), req.Text)
	history = a.window(history, pipeline.EstimateTokens(system)+pipeline.EstimateTokens(current))

	p := models.Prompt{System: system}
	var prev time.Time
	for _, m := range history {
		text := m.Body
		if m.Role == "user" {
			text = pipeline.Envelope(a.envelope(req, m.Sender, m.CreatedAt, prev), m.Body)
			prev = m.CreatedAt
		}
		p.Messages = append(p.Messages, models.Message{Role: m.Role, Text: text})
	}
	p.Messages = append(p.Messages, models.Message{Role: "user", Text: current})
	for _, r := range req.Rounds {
		p.Messages = append(p.Messages, models.Message{Role: "assistant", Text: r.Text, ToolCalls: r.Calls})
		for _, res := range r.Results {
			p.Messages = append(p.Messages, models.Message{Role: "tool", ToolCallID: res.CallID, Text: res.Output, IsError: res.IsError})
		}
	}
	return p
}

// withStoredResults fills in the outputs a request carries only by
// reference (ToolResult.Stored), from the store where the tool's activity
// saved them. One that is missing fails the attempt as
// ErrToolResultsMissing (toolResultsMissing): the model must not read an
// empty result as the tool's answer, and no model can do better.
func (a *Activities) withStoredResults(ctx context.Context, req pipeline.TurnRequest) (pipeline.TurnRequest, error) {
	var saved map[string]store.ToolResult
	rounds := make([]pipeline.ToolRound, len(req.Rounds))
	for i, r := range req.Rounds {
		results := make([]pipeline.ToolResult, len(r.Results))
		for j, res := range r.Results {
			if res.Stored && res.Output == "" {
				if saved == nil {
					if a.Store == nil {
						return req, a.toolResultsMissing(req, res, "this worker has no store (set REPLYFLOW_STORE_DSN on every worker, to the same store)")
					}
					var err error
					if saved, err = a.Store.ToolResults(ctx, req.Session.WorkflowID(), req.TurnID); err != nil {
						return req, fmt.Errorf("load the tool results of %s: %w", req.Session.WorkflowID(), err)
					}
				}
				got, ok := saved[res.CallID]
				if !ok {
					keep := store.ToolResultsRetention(a.Settings.ProposalTTL.D(), a.Settings.MaxSteps)
					return req, a.toolResultsMissing(req, res, fmt.Sprintf("it is not in the store (results are kept %s: REPLYFLOW_MAX_STEPS × REPLYFLOW_PROPOSAL_TTL + 48h, as this worker is configured; a worker configured with a shorter REPLYFLOW_PROPOSAL_TTL, or a store that was reset, loses them sooner)", keep))
				}
				res.Output, res.IsError = got.Output, got.IsError
			}
			results[j] = res
		}
		rounds[i] = pipeline.ToolRound{Text: r.Text, Calls: r.Calls, Results: results}
	}
	req.Rounds = rounds
	return req, nil
}

// toolResultsMissing is the non-retryable ErrToolResultsMissing of a
// step that cannot read the stored result res: the turn cannot go on,
// and the user must ask again.
func (a *Activities) toolResultsMissing(req pipeline.TurnRequest, res pipeline.ToolResult, why string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("step %d of turn %s of %s cannot read the result of tool call %s (%s): %s; the turn cannot go on without it, ask again", req.Step+1, req.TurnID, req.Session.WorkflowID(), res.CallID, res.Name, why),
		pipeline.ErrToolResultsMissing, nil)
}

// systemText is the system prompt: the persona, then where and when the
// conversation happens.
func (a *Activities) systemText(key pipeline.SessionKey, group bool, now time.Time) string {
	system := pipeline.SystemContext(key.Channel, key.Chat, group, now, a.Location)
	if a.SystemPrompt != "" {
		system = a.SystemPrompt + "\n\n" + system
	}
	return system
}

// budget is the prompt's token budget (REPLYFLOW_CONTEXT_TOKENS).
func (a *Activities) budget() int {
	if a.ContextTokens <= 0 {
		return 8000
	}
	return a.ContextTokens
}

// window is the newest part of history that fits the budget beside
// reserved tokens, opening on a user message (providers require it).
func (a *Activities) window(history []store.Message, reserved int) []store.Message {
	texts := make([]string, len(history))
	for i, m := range history {
		texts[i] = m.Body
	}
	history = history[len(history)-pipeline.FitBudget(texts, a.budget(), reserved):]
	for len(history) > 0 && history[0].Role != "user" {
		history = history[1:]
	}
	return history
}

func (a *Activities) envelope(req pipeline.TurnRequest, sender string, at, prev time.Time) pipeline.EnvelopeFields {
	return pipeline.EnvelopeFields{Channel: req.Session.Channel, Sender: sender, Group: req.Group, At: at, Prev: prev, Loc: a.Location}
}

// remember appends the turn's user text and the reply to the transcript,
// keyed by turn and step so a repeated attempt writes once.
func (a *Activities) remember(ctx context.Context, transcriptID string, req pipeline.TurnRequest, reply string, now time.Time) error {
	if a.Store == nil {
		return nil
	}
	last := lastMessage(req)
	key := fmt.Sprintf("%s/%d", req.TurnID, req.Step)
	msgs := []store.Message{{Key: key + "/user", Role: "user", Sender: last.SenderName, Body: req.Text, CreatedAt: last.At}}
	if reply != "" {
		msgs = append(msgs, store.Message{Key: key + "/assistant", Role: "assistant", Body: reply, CreatedAt: now})
	}
	return a.Store.Append(ctx, transcriptID, msgs)
}

func lastMessage(req pipeline.TurnRequest) pipeline.TurnMessage {
	var last pipeline.TurnMessage
	if n := len(req.Messages); n > 0 {
		last = req.Messages[n-1]
		if last.SenderName == "" {
			last.SenderName = last.SenderID
		}
	}
	if last.At.IsZero() {
		last.At = time.Now()
	}
	return last
}

// prevTime is when the last user message of the history was sent: the
// envelope's "+elapsed" is the time between the user's messages.
func prevTime(history []store.Message) time.Time {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == "user" {
			return history[i].CreatedAt
		}
	}
	return time.Time{}
}

// SaveSessionSettings stores what a user changed in chat in the session
// entry, so the next run of the session starts with it.
func (a *Activities) SaveSessionSettings(ctx context.Context, key pipeline.SessionKey, s pipeline.SessionSettings) error {
	if a.Store == nil {
		return nil
	}
	entry, err := a.Store.SessionEntry(ctx, key.WorkflowID())
	if err != nil {
		return err
	}
	entry.ModelOverride, entry.Activation = s.ModelOverride, s.Activation
	entry.ThinkLevel, entry.Verbose, entry.UsageMode, entry.Muted = string(s.Think), s.Verbose, string(s.Usage), s.Muted
	entry.QueueJSON = ""
	if s.Queue != nil {
		entry.QueueJSON = mustJSON(s.Queue)
	}
	return a.Store.SaveSettings(ctx, entry)
}

// Claim spends a one-time claim code: its sender becomes an owner, kept in
// the store for every later run. A code claims only an agent with no
// owner: with REPLYFLOW_OWNERS set on this worker every code is refused,
// whichever start printed it (the configured owners are not in the
// store, whose own check sees only claimed ones).
//
// A code a bot sends makes no owner: a bot speaks for others (a bridge
// relays a whole other chat), so its owner rights would be theirs. The
// code is burnt instead, since the chat it came from has seen it.
func (a *Activities) Claim(ctx context.Context, req pipeline.ClaimRequest) (bool, error) {
	if a.Store == nil || len(a.Settings.Owners) > 0 {
		return false, nil
	}
	if req.ByBot {
		return false, a.Store.BurnClaimCode(ctx, req.Code)
	}
	return a.Store.Claim(ctx, req.Code, req.Who)
}
