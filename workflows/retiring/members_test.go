package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// A member may turn a chat's settings down; raising them, which raises
// what every later turn costs or changes the chat for everyone, is the
// owners'.
func TestOnlyOwnersRaiseAChatsSettings(t *testing.T) {
	env, p := newEnv(t)
	for i, text := range []string{"/think high", "/verbose on", "/usage full", "/queue cap:1000 debounce:1m", "/think medium /verbose on"} {
		signalAt(env, time.Duration(i+1)*time.Second, inbound("raise"+string(rune('a'+i)), text))
	}
	signalAt(env, 10*time.Second, inbound("down1", "/think off"))
	signalAt(env, 11*time.Second, inbound("down2", "/usage tokens"))
	signalAt(env, 12*time.Second, inbound("down3", "/queue reset"))
	signalAt(env, time.Minute, inbound("m1", "hello"))
	signalAt(env, 2*time.Minute, ownerInbound("own1", "/think high /verbose on"))
	signalAt(env, 3*time.Minute, inbound("m2", "again"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/think high"})}, got["raisea"])
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/verbose on"})}, got["raiseb"])
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/usage full"})}, got["raisec"])
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/queue debounce:1m0s cap:1000"})}, got["raised"])
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/think medium", "/verbose on"})}, got["raisee"])
	assert.Equal(t, []string{"Set for this chat: think off."}, got["down1"])
	assert.Equal(t, []string{"Set for this chat: usage tokens."}, got["down2"])
	assert.Contains(t, got["down3"][0], "Queue settings back to the defaults")
	assert.Equal(t, []string{"Set for this chat: think high, verbose on."}, got["own1"])

	require.Len(t, p.steps, 2)
	assert.Equal(t, pipeline.ThinkOff, p.steps[0].Req.Think, "no member's raise reached the turn")
	assert.Equal(t, pipeline.ThinkHigh, p.steps[1].Req.Think, "an owner's did")
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, saved := range p.saved[:len(p.saved)-1] {
		assert.NotEqual(t, pipeline.ThinkHigh, saved.Think, "a refused raise is not kept: %+v", saved)
		assert.False(t, saved.Verbose, "a refused raise is not kept: %+v", saved)
		assert.NotEqual(t, pipeline.UsageFull, saved.Usage)
		if saved.Queue != nil {
			assert.Nil(t, saved.Queue.Cap, "a refused /queue is not kept")
		}
	}
}

// Inside a message the same rule holds: a member's message that raises a
// setting for its own turn is refused whole, so nothing reaches the model
// with an effort the member may not ask for.
func TestAMemberCannotRaiseASettingInsideAMessage(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "what is 2+2? /think high"))
	signalAt(env, time.Minute, inbound("m2", "and 3+3? /queue cap:500"))
	signalAt(env, 2*time.Minute, inbound("m3", "and 4+4? /think off"))
	signalAt(env, 3*time.Minute, ownerInbound("m4", "and 5+5? /think high"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/think high"}) + " Your message was not sent to the model: send it again without them."}, got["m1"])
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/queue cap:500"}) + " Your message was not sent to the model: send it again without them."}, got["m2"])
	assert.Equal(t, []string{"and 4+4?", "and 5+5?"}, p.turnTexts(), "only the allowed messages reach the model")
	require.Len(t, p.steps, 2)
	assert.Equal(t, pipeline.ThinkOff, p.steps[0].Req.Think)
	assert.Equal(t, pipeline.ThinkHigh, p.steps[1].Req.Think, "an owner raises it for their turn")
}

// REPLYFLOW_MEMBER_SETTINGS opens the settings it names, and only those.
func TestMemberSettingsOpenWhatTheOperatorNames(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) { p.settings.MemberSettings = []string{pipeline.MemberThink} })
	signalAt(env, time.Second, inbound("d1", "/think high"))
	signalAt(env, 2*time.Second, inbound("d2", "/verbose on"))
	signalAt(env, 3*time.Second, inbound("h1", "/help"))
	signalAt(env, time.Minute, inbound("m1", "hello"))
	run(t, env, nil)

	got := p.answersTo()
	assert.Equal(t, []string{"Set for this chat: think high."}, got["d1"])
	assert.Equal(t, []string{pipeline.RefuseOwnersOnly([]string{"/verbose on"})}, got["d2"])
	assert.Contains(t, got["h1"][0], "Only owners raise /verbose on, /usage full, /queue debounce, cap and drop here")
	require.Len(t, p.steps, 1)
	assert.Equal(t, pipeline.ThinkHigh, p.steps[0].Req.Think)
}

// A run that began before the rule keeps its release's behaviour while
// it replays; run by today's code, it moves on at its first quiet point
// and the next run holds the rule.
func TestARunFromBeforeTheMemberRuleKeepsItsBehaviourOrMovesOn(t *testing.T) {
	env, p := newEnv(t)
	runsFromBefore(env, changeMembers)
	signalAt(env, time.Second, inbound("d1", "/think high"))
	signalAt(env, time.Minute, inbound("m1", "hello"))
	run(t, env, nil)
	assert.Equal(t, []string{"Set for this chat: think high."}, p.answersTo()["d1"])
	require.Len(t, p.steps, 1)
	assert.Equal(t, pipeline.ThinkHigh, p.steps[0].Req.Think)

	env, p = newEnv(t)
	runsFromBeforeAndMovesOn(env, changeMembers)
	st := &State{Status: StatusIdle, TurnState: TurnState{TurnSeq: 3}}
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession, State: st})
	carried := continuedState(t, env)
	assert.Equal(t, 3, carried.TurnSeq)
	assert.Empty(t, p.steps)
}

func retiring(p *fakePlatform) { p.retires = true }

// A run of the members release, the last of this workflow type, retires
// at its first quiet point: it continues as new into the chat session
// workflow with its state.
func TestARunOfTheLastReleaseRetiresIntoTheChatSessionWorkflow(t *testing.T) {
	env, p := newEnv(t, retiring)
	st := &State{Status: StatusIdle, TurnState: TurnState{TurnSeq: 3, ModelOverride: "openai/x"}}
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession, State: st})
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	assert.Equal(t, ChatSessionName, can.WorkflowType.Name)
	var next RetiredParams
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(can.Input.Payloads[0], &next))
	require.NotNil(t, next.Retired)
	assert.Equal(t, 3, next.Retired.TurnSeq)
	assert.Equal(t, "openai/x", next.Retired.ModelOverride)
	assert.Equal(t, demoSession, next.Session)
	assert.Empty(t, p.steps)
}
