package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
)

const gateSystem = `You decide whether an assistant in a group chat should reply to the latest messages.
Forward only when the latest messages ask the assistant something, ask a question it can usefully answer, or clearly want its help.
Answer with strict JSON and nothing else: {"forward": true|false, "reason": "a few words"}`

// GateCheck asks the gate model whether a batch in a gated chat needs a
// reply. It makes one attempt: any failure (error, timeout, output that is
// not the strict JSON) means "skip", which the workflow decides.
func (a *Activities) GateCheck(ctx context.Context, req pipeline.GateRequest) (pipeline.GateResult, error) {
	model, err := a.Models.Get(a.Settings.GateModel)
	if err != nil {
		return pipeline.GateResult{}, modelError(pipeline.TurnRequest{Session: req.Session, Model: a.Settings.GateModel}, err, nil)
	}
	if err := a.Spend.admitGate(ctx, req); err != nil {
		return pipeline.GateResult{}, err
	}
	var b strings.Builder
	for _, m := range req.Context {
		fmt.Fprintf(&b, "(earlier) %s: %s\n", nonEmptyName(m), m.Text)
	}
	for _, m := range req.Batch {
		fmt.Fprintf(&b, "(latest) %s: %s\n", nonEmptyName(m), m.Text)
	}
	if req.IndirectMention {
		b.WriteString("(the latest messages mention the assistant's name)\n")
	}
	prompt := models.Prompt{System: gateSystem, Messages: []models.Message{{Role: "user", Text: b.String()}}}
	answer, err := model.Complete(ctx, prompt)
	if err == nil {
		a.Spend.counted(ctx, a.Logger, req.Session, gateSender(req), a.Settings.GateModel, callGate, answer.Usage, func() int64 { return estimateTokens(prompt, answer) })
	}
	if err != nil {
		return pipeline.GateResult{}, modelError(pipeline.TurnRequest{Session: req.Session, Model: a.Settings.GateModel}, err, nil)
	}
	result, err := ParseGateAnswer(answer.Text)
	if err != nil {
		return pipeline.GateResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("gate model %s for %s: %v", a.Settings.GateModel, req.Session.WorkflowID(), err), pipeline.ErrFormat, err)
	}
	return result, nil
}

// gateReasonBytes bounds the gate's reason: a few words are asked for,
// and the reason is logged at Info with each message of the batch.
const gateReasonBytes = 100

// ParseGateAnswer reads the gate's strict JSON: one object with a boolean
// "forward" and an optional string "reason", nothing else. Keys match
// exactly (encoding/json alone would take "FORWARD" too). The answer may
// carry what anyone in the chat wrote (a member can ask the gate to quote
// the others), and the reason and these errors reach the logs: the reason
// is cut to gateReasonBytes on one line, and the errors name the problem,
// never a value or a key of the answer.
func ParseGateAnswer(text string) (pipeline.GateResult, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(text)))
	if err := dec.Decode(&raw); err != nil {
		// A syntax error's text quotes a character of the answer.
		if errors.Is(err, io.EOF) {
			return pipeline.GateResult{}, errors.New("the answer is empty, not the strict JSON asked for")
		}
		return pipeline.GateResult{}, errors.New("the answer is not the strict JSON object asked for")
	}
	if raw == nil {
		return pipeline.GateResult{}, errors.New("the answer is null, not the JSON object asked for")
	}
	if dec.More() {
		return pipeline.GateResult{}, errors.New("the answer has more than one JSON value")
	}
	var r pipeline.GateResult
	for key, value := range raw {
		switch key {
		case "forward":
			switch string(bytes.TrimSpace(value)) {
			case "true":
				r.Forward = true
			case "false":
			default:
				return pipeline.GateResult{}, errors.New(`"forward" is not a boolean`)
			}
		case "reason":
			var reason string
			if err := json.Unmarshal(value, &reason); err != nil {
				return pipeline.GateResult{}, errors.New(`"reason" is not a string`)
			}
			r.Reason = gateReason(reason)
		default:
			return pipeline.GateResult{}, errors.New("the answer has an unknown field")
		}
	}
	if _, ok := raw["forward"]; !ok {
		return pipeline.GateResult{}, errors.New(`the answer has no boolean "forward"`)
	}
	return r, nil
}

// gateReason is the reason as logged: on one line, without control or
// bidirectional formatting characters, runs of space as one, and at most
// gateReasonBytes, cut between characters.
func gateReason(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, s)
	return pipeline.CutBytes(strings.Join(strings.Fields(s), " "), gateReasonBytes)
}

func nonEmptyName(m pipeline.TurnMessage) string {
	if m.SenderName != "" {
		return m.SenderName
	}
	return m.SenderID
}
