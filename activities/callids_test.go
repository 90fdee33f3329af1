package activities

import (
	"bytes"
	"log/slog"
	"regexp"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

func TestUniqueCallIDs(t *testing.T) {
	round := func(ids ...string) pipeline.ToolRound {
		var r pipeline.ToolRound
		for _, id := range ids {
			r.Calls = append(r.Calls, pipeline.ToolCall{ID: id, Name: "lookup"})
			r.Results = append(r.Results, pipeline.ToolResult{CallID: id, Name: "lookup"})
		}
		return r
	}
	cases := []struct {
		name     string
		step     int
		rounds   []pipeline.ToolRound
		ids      []string
		want     []string
		replaced []int
	}{
		{"unique: unchanged", 1, []pipeline.ToolRound{round("call_a")}, []string{"call_b", "toolu_01:x.y"}, []string{"call_b", "toolu_01:x.y"}, nil},
		{"empty", 0, nil, []string{"", ""}, []string{"rf_0_0", "rf_0_1"}, []int{0, 1}},
		{"one empty among unique", 0, nil, []string{"call_a", ""}, []string{"call_a", "rf_0_1"}, []int{1}},
		{"repeated in one step: the first keeps it", 0, nil, []string{"call_1", "call_1", "call_1"}, []string{"call_1", "rf_0_1", "rf_0_2"}, []int{1, 2}},
		{"repeated from an earlier round", 2, []pipeline.ToolRound{round("call_1"), round("call_2")}, []string{"call_2", "call_1", "call_3"}, []string{"rf_2_0", "rf_2_1", "call_3"}, []int{0, 1}},
		{"an earlier step's generated ID", 1, []pipeline.ToolRound{round("rf_0_0", "rf_0_1")}, []string{"rf_0_0", ""}, []string{"rf_1_0", "rf_1_1"}, []int{0, 1}},
		{"generated ID taken by a provider's in this step", 0, nil, []string{"", "rf_0_0"}, []string{"rf_0_0_2", "rf_0_0"}, []int{0}},
		{"generated ID taken by an earlier round", 3, []pipeline.ToolRound{round("rf_3_0", "rf_3_0_2")}, []string{""}, []string{"rf_3_0_3"}, []int{0}},
		{"a result's ID counts as taken", 1, []pipeline.ToolRound{{Results: []pipeline.ToolResult{{CallID: "call_9"}}}}, []string{"call_9"}, []string{"rf_1_0"}, []int{0}},
		{"no calls", 0, []pipeline.ToolRound{round("call_1")}, nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := make([]pipeline.ToolCall, len(c.ids))
			for i, id := range c.ids {
				calls[i] = pipeline.ToolCall{ID: id, Name: "lookup", Arguments: `{}`}
			}
			replaced := uniqueCallIDs(c.step, c.rounds, calls)
			var got []string
			for _, call := range calls {
				got = append(got, call.ID)
			}
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.replaced, replaced)
		})
	}
}

// anthropicToolID is the pattern Anthropic holds tool_use IDs to.
var anthropicToolID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Providers that return empty or repeated tool call IDs (Gemini's
// OpenAI-compatible endpoint, LM Studio) get distinct ones from
// AgentTurn, through the real SDKs; the next step sends those same IDs
// back, on the assistant's calls and on the tool results alike.
func TestAgentTurnGivesToolCallsDistinctIDs(t *testing.T) {
	oa, an := modeltest.NewOpenAI(), modeltest.NewAnthropic()
	t.Cleanup(oa.Close)
	t.Cleanup(an.Close)
	var logs bytes.Buffer
	acts := &Activities{
		Models: &models.Registry{
			MaxTokens:        256,
			OpenAIOptions:    []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")},
			AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithBaseURL(an.URL), anthropicopt.WithAPIKey("test")},
		},
		Outbound: map[string]adapters.Outbound{session.Channel: &fakeOutbound{}},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	}
	providers := []struct {
		model  string
		server *modeltest.Server
	}{{"openai/gpt-4o", oa}, {"anthropic/claude-test", an}}
	for _, p := range providers {
		for _, id := range []string{"", "call_1"} {
			t.Run(p.model+"/id="+id, func(t *testing.T) {
				logs.Reset()
				before := len(p.server.Requests())
				secret := `{"order":1,"card":"4111 1111 1111 1111"}`
				p.server.Push(
					modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "refund", Arguments: secret}, {ID: id, Name: "delete_account", Arguments: `{}`}}},
					// The next step repeats an ID of the first.
					modeltest.Step{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "lookup", Arguments: `{}`}}},
				)
				req := pipeline.TurnRequest{
					Session: session, TurnID: "t-" + id, Model: p.model, Text: "refund my order",
					Messages: []pipeline.TurnMessage{{MessageID: "m1", SenderID: "alice", Text: "refund my order", At: time.Now()}},
				}
				first := agentTurn(t, acts, req)
				require.Len(t, first.ToolCalls, 2)
				ids := []string{first.ToolCalls[0].ID, first.ToolCalls[1].ID}
				assert.NotEqual(t, ids[0], ids[1], "two calls, two IDs")
				for _, got := range ids {
					assert.Regexp(t, anthropicToolID, got)
				}
				if id != "" {
					assert.Equal(t, id, ids[0], "the provider's ID is kept where it is unique")
				}
				assert.Contains(t, logs.String(), "Tool call IDs were empty or repeated")
				assert.Contains(t, logs.String(), "model="+p.model)
				assert.NotContains(t, logs.String(), "4111", "the log never carries a call's arguments")

				req.Step = 1
				req.Rounds = []pipeline.ToolRound{{Calls: first.ToolCalls, Results: []pipeline.ToolResult{
					{CallID: ids[0], Name: "refund", Output: "refunded"},
					{CallID: ids[1], Name: "delete_account", Output: "not allowed", IsError: true},
				}}}
				second := agentTurn(t, acts, req)
				require.Len(t, second.ToolCalls, 1)
				assert.NotContains(t, ids, second.ToolCalls[0].ID, "an ID of an earlier step is not reused")
				assert.NotEmpty(t, second.ToolCalls[0].ID)

				reqs := p.server.Requests()
				require.Len(t, reqs, before+2)
				assert.Equal(t, ids, reqs[before+1].CallIDs, "the assistant's calls go back with the IDs the session has")
				assert.Equal(t, ids, reqs[before+1].ResultIDs, "and the results answer the same IDs")
			})
		}
	}
}

func agentTurn(t *testing.T, acts *Activities, req pipeline.TurnRequest) pipeline.TurnResult {
	t.Helper()
	v, err := newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	require.NoError(t, err)
	var res pipeline.TurnResult
	require.NoError(t, v.Get(&res))
	return res
}
