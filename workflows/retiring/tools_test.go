package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// toolScript answers each model step with the next entry: tool calls, or
// the final text when it has none.
func toolScript(steps ...[]pipeline.ToolCall) func(*fakePlatform) {
	return func(p *fakePlatform) {
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			if req.Step < len(steps) && !req.NoTools {
				return pipeline.TurnResult{Reply: "checking", Model: req.Model, ToolCalls: steps[req.Step]}, nil
			}
			return pipeline.TurnResult{Reply: "final answer", Model: req.Model}, nil
		}
	}
}

func TestToolCallsRunAsActivitiesAndTheirResultsGoToTheNextStep(t *testing.T) {
	weather := pipeline.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}
	clock := pipeline.ToolCall{ID: "c2", Name: "get_time", Arguments: `{}`}
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{weather, clock}))
	signalAt(env, time.Second, inbound("m1", "weather and time?"))
	run(t, env, nil)

	assert.Equal(t, []pipeline.ToolCall{weather, clock}, p.tools, "each call ran once, in order")
	require.Len(t, p.steps, 2)
	rounds := p.steps[1].Req.Rounds
	require.Len(t, rounds, 1)
	assert.Equal(t, "checking", rounds[0].Text)
	assert.Equal(t, []pipeline.ToolResult{
		{CallID: "c1", Name: "get_weather", Stored: true},
		{CallID: "c2", Name: "get_time", Stored: true},
	}, rounds[0].Results, "the next step reads the outputs from the store (cost_test.go)")
	assert.Equal(t, []string{"final answer"}, p.replies(), "only the final answer is delivered")
}

func TestSkipResponseKeepsTheTurnSilent(t *testing.T) {
	env, p := newEnv(t, toolScript([]pipeline.ToolCall{{ID: "c1", Name: pipeline.SkipResponseTool, Arguments: "{}"}}))
	signalAt(env, time.Second, inbound("m1", "just chatting among ourselves"))
	snap := queryStateAt(t, env, 10*time.Second)
	run(t, env, nil)

	assert.Empty(t, p.replies())
	assert.Empty(t, p.tools, "the built-in runs no activity")
	assert.Equal(t, "silent", snap.LastTurn.Outcome)
}

func TestStepsAreBoundedAndTheLastMustAnswer(t *testing.T) {
	loop := []pipeline.ToolCall{{ID: "c", Name: "again", Arguments: "{}"}}
	env, p := newEnv(t, toolScript(loop, loop, loop, loop, loop, loop))
	signalAt(env, time.Second, inbound("m1", "loop forever"))
	run(t, env, nil)

	require.Len(t, p.steps, 4, "MaxSteps is 4 in these tests")
	assert.True(t, p.steps[3].Req.NoTools, "the last step is offered no tools")
	assert.Len(t, p.tools, 3)
	assert.Equal(t, []string{"final answer"}, p.replies())
}
