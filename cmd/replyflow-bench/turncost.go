package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// toolResultBytes is the size of each tool result in the tool turns:
// a quarter of the 16 KiB a result may have.
const toolResultBytes = 4 << 10

// toolRounds are the tool turns measured: enough to see whether a turn's
// history grows with its rounds beyond their results.
var toolRounds = []int{2, 4}

// toolModel is the model the tool turns pick with a /model directive: the
// fake OpenAI server of costRig, scripted per turn.
const toolModel = "openai/bench-tools"

// costRig is a rig (see startE2E) that can also run tool turns: a fake
// OpenAI server the sessions may pick, and an HTTP tool that answers
// toolResultBytes.
type costRig struct {
	*e2e
	model *modeltest.Server
}

func startCostRig(ctx context.Context, c client.Client, o options, name, bin string, extra map[string]string) (*costRig, func(), error) {
	model := modeltest.NewOpenAI()
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"q":%q,"text":%q}`, r.URL.Query().Get("q"), strings.Repeat("x", toolResultBytes-20))
	}))
	tools := filepath.Join(o.workDir, name+"-tools.json")
	spec, _ := json.Marshal([]map[string]any{{
		"name": "lookup", "description": "Look something up", "url": tool.URL + "/lookup", "method": "GET", "timeout": "5s", "allow_private": true,
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []string{"q"}},
	}})
	if err := os.WriteFile(tools, spec, 0o644); err != nil {
		return nil, nil, err
	}
	ro := o
	ro.replyflow = bin
	ro.rawEnv = append(ro.rawEnv, "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=bench")
	vars := map[string]string{"MODEL_ALLOW": toolModel, "TOOLS_FILE": tools, "DEPLOYMENT_NAME": "bench-" + name}
	maps.Copy(vars, extra)
	r, stop, err := startE2E(ctx, c, ro, name, vars)
	if err != nil {
		model.Close()
		tool.Close()
		return nil, nil, err
	}
	return &costRig{e2e: r, model: model}, func() { stop(); model.Close(); tool.Close() }, nil
}

// measured is one turn's cost, with the heartbeats the server counted.
func (r *costRig) measured(ctx context.Context, o options, chat telegramtest.Chat, text string) (harness.TurnCost, error) {
	id := pipeline.SessionKey{Channel: telegram.Channel, Account: r.bot.Account(), Chat: strconv.FormatInt(chat.ID, 10)}.WorkflowID()
	var before []*historypb.HistoryEvent
	if _, err := r.c.DescribeWorkflowExecution(ctx, id, ""); err == nil {
		events, err := settledHistory(ctx, r.c, id)
		if err != nil {
			return harness.TurnCost{}, err
		}
		before = events
	}
	var actionsBefore map[string]float64
	if o.metricsURL != "" {
		var err error
		if actionsBefore, err = serverActions(ctx, o.metricsURL); err != nil {
			return harness.TurnCost{}, err
		}
	}
	msg, err := r.ask(ctx, chat, text)
	if err != nil {
		return harness.TurnCost{}, err
	}
	if err := r.awaitCleared(ctx, chat, msg); err != nil {
		return harness.TurnCost{}, err
	}
	after, err := settledHistory(ctx, r.c, id)
	if err != nil {
		return harness.TurnCost{}, err
	}
	cost := harness.CostOf(after[len(before):])
	if o.metricsURL != "" {
		actionsAfter, err := serverActions(ctx, o.metricsURL)
		if err != nil {
			return harness.TurnCost{}, err
		}
		if n := heartbeatsBetween(actionsBefore, actionsAfter); n > 0 {
			cost.Actions["heartbeat"] = n
			cost.Counted["heartbeat"] = []string{"RecordActivityTaskHeartbeat calls, from the server's action metric (not in history)"}
		}
	}
	return cost, nil
}

// simpleTurn measures a simple turn, a session's second, in a new chat:
// the first turn's start and clear fall outside it.
func (r *costRig) simpleTurn(ctx context.Context, o options) (telegramtest.Chat, harness.TurnCost, error) {
	r.next++
	chat := telegramtest.Private(r.next)
	if _, err := r.measured(ctx, o, chat, "hello"); err != nil {
		return chat, harness.TurnCost{}, r.withLog(err)
	}
	cost, err := r.measured(ctx, o, chat, "hello again")
	if err != nil {
		return chat, harness.TurnCost{}, r.withLog(err)
	}
	return chat, cost, nil
}

// costRows measures, with bin (labelled) and extra settings, a simple
// turn (a session's second) and, with tools, turns with toolRounds tool
// rounds after it in the same session, one at a time. It returns the
// simple turn's cost with its rows.
func costRows(ctx context.Context, c client.Client, o options, label, bin string, extra map[string]string, tools bool) ([][]string, harness.TurnCost, error) {
	r, stop, err := startCostRig(ctx, c, o, "cost-"+strings.NewReplacer(" ", "-", ",", "", "=", "-").Replace(label), bin, extra)
	if err != nil {
		return nil, harness.TurnCost{}, err
	}
	defer stop()
	simpleChat, simple, err := r.simpleTurn(ctx, o)
	if err != nil {
		return nil, harness.TurnCost{}, err
	}
	rows := [][]string{
		{label + ": simple turn, billable actions", fmt.Sprintf("%d (%s)", simple.Total(), simple.Breakdown()), ""},
		{label + ": simple turn, history events and bytes", fmt.Sprintf("%d events, %d bytes", simple.Events, simple.Bytes), ""},
	}
	for _, n := range toolRounds {
		if !tools {
			break
		}
		var steps []modeltest.Step
		for k := range n {
			steps = append(steps, modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: fmt.Sprintf("call_%d", k), Name: "lookup", Arguments: fmt.Sprintf(`{"q":"item %d"}`, k)}}})
		}
		r.model.Push(append(steps, modeltest.Step{Text: "Here is what I found."})...)
		// In the same session, after the simple turns: a turn, not a
		// session's start, is measured.
		cost, err := r.measured(ctx, o, simpleChat, "look it up /model "+toolModel)
		if err != nil {
			return nil, harness.TurnCost{}, r.withLog(err)
		}
		beyond := cost.Bytes - n*toolResultBytes
		rows = append(rows,
			[]string{fmt.Sprintf("%s: turn with %d tool rounds, billable actions", label, n), fmt.Sprintf("%d (%s)", cost.Total(), cost.Breakdown()), ""},
			[]string{fmt.Sprintf("%s: turn with %d tool rounds, history events and bytes", label, n),
				fmt.Sprintf("%d events, %d bytes (%d beyond the %d results of %d KiB)", cost.Events, cost.Bytes, beyond, n, toolResultBytes>>10), ""},
		)
	}
	return rows, simple, nil
}

// benchTurnCost measures the cost per turn and the saturation of the
// build of the release before the newest workflow change ("before") and
// of today's ("now"), in the same run.
func benchTurnCost(ctx context.Context, c client.Client, o options) ([][]string, error) {
	var rows [][]string
	var debounceOff harness.TurnCost
	for _, b := range []struct{ label, bin string }{{"before", o.baseline}, {"now", o.replyflow}} {
		r, simple, err := costRows(ctx, c, o, b.label, b.bin, nil, true)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
		debounceOff = simple
	}
	// The cheapest a turn gets: the reply's delivery takes the reaction
	// off, so no done reaction waits for its clear.
	r, _, err := costRows(ctx, c, o, "now, REACTION_CLEAR_DELAY=0", o.replyflow, map[string]string{"REACTION_CLEAR_DELAY": "0s"}, false)
	if err != nil {
		return nil, err
	}
	rows = append(rows, r...)
	r, err = devDefaultsRows(ctx, c, o, debounceOff)
	if err != nil {
		return nil, err
	}
	rows = append(rows, r...)
	if len(o.sessions) == 0 {
		return rows, nil
	}
	rates := map[string]float64{}
	for round := range o.saturationRounds {
		for _, b := range []struct{ label, bin string }{{"before", o.baseline}, {"now", o.replyflow}} {
			ro := o
			ro.replyflow = b.bin
			name := fmt.Sprintf("saturation-%s-%d", b.label, round+1)
			rig, stop, err := startE2E(ctx, c, ro, name, map[string]string{"DEPLOYMENT_NAME": "bench-" + name})
			if err != nil {
				return nil, err
			}
			row, rate, err := rig.latencyRate(ctx, slices.Max(o.sessions), o.messages, 0)
			stop()
			if err != nil {
				return nil, rig.withLog(err)
			}
			rates[b.label] += rate / float64(o.saturationRounds)
			row[0] = fmt.Sprintf("%s (round %d): %s", b.label, round+1, row[0])
			rows = append(rows, row)
		}
	}
	return append(rows, []string{"saturation now / before (mean of the rounds)", fmt.Sprintf("%.2f (%.1f/s against %.1f/s)", rates["now"]/rates["before"], rates["now"], rates["before"]), "≥ 1.5"}), nil
}

// devDefaults are the settings the bench's rigs change that a user of
// `make dev` (`replyflow dev`) runs with at replyflow's defaults
// (cmd/replyflow/config.go): a debounce window, which shows 👀 while it
// waits, and the done reaction's clear a minute after the reply.
var devDefaults = map[string]string{"DEBOUNCE": "1s", "REACTION_CLEAR_DELAY": "60s"}

// devDefaultsRows measures today's simple turn with devDefaults, beside
// debounceOff (today's, as the "now" rows measured it), and lists what
// each of its billable actions was.
func devDefaultsRows(ctx context.Context, c client.Client, o options, debounceOff harness.TurnCost) ([][]string, error) {
	r, stop, err := startCostRig(ctx, c, o, "cost-dev-defaults", o.replyflow, devDefaults)
	if err != nil {
		return nil, err
	}
	defer stop()
	_, dev, err := r.simpleTurn(ctx, o)
	if err != nil {
		return nil, err
	}
	figures := func(t harness.TurnCost) string {
		return fmt.Sprintf("%d billable actions, %d history events", t.Total(), t.Events)
	}
	rows := [][]string{
		{"simple turn (debounce off)", figures(debounceOff), ""},
		{"simple turn (make dev defaults: 1 s debounce, 👀)", figures(dev), ""},
	}
	for _, line := range dev.Itemized() {
		rows = append(rows, []string{"  … make dev defaults: " + line[0], line[1], ""})
	}
	return rows, nil
}
