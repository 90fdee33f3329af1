package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workers/codec"
)

// With codec keys, nothing of a conversation is readable in Temporal
// without them: not the message, not the reply, not a failure's message;
// the codec server gives them back to the holder of its token.
func TestCodecKeepsConversationTextOutOfHistory(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.CodecKeys = codecKeyEntry(t, "cxkey1")
	cfg.Model, cfg.ModelFallbacks = "openai/cx-primary", []string{"anthropic/cx-backup"}
	require.NoError(t, cfg.validate())
	s := startStackOn(t, cfg, dialWithCodec(t, cfg))
	unique := randomToken()[:12]
	failure := "cx-provider-echoed-" + unique
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = failingPrimary{primary: "openai/cx-primary", failure: failure, backup: &testModel{}}
	})
	chat := uniqueChat("cx-encrypted")
	text := "cx secret message " + unique
	events := subscribe(t, s.baseURL, chat)
	code, body := s.post(chat, fmt.Sprintf(`{"message_id":"c1","sender_id":"alice","text":%q}`, text))
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("c1"))
	reply := lastText(seen)
	require.Equal(t, "You said: "+text, reply, "the backup model answered")
	require.Equal(t, []string{"openai/cx-primary: " + pipeline.ErrAuth}, s.state(chat).LastTurn.Fallback, "the primary failed first")

	id := pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()
	history := sessionHistory(t, temporalServer.Client(), id)
	raw := rawHistory(t, history)
	for _, secret := range []string{text, reply, failure, unique} {
		assert.NotContains(t, raw, secret, "clear text in the history")
	}
	assert.Contains(t, raw, "cxkey1", "the payloads name their key")
	summary := history[0].GetUserMetadata().GetSummary()
	assert.Equal(t, codec.EncodingEncrypted, string(summary.GetMetadata()[converter.MetadataEncoding]), "the static summary is a payload, encrypted too")
	failed := eventsOf(history, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED)
	require.NotEmpty(t, failed, "the primary's failure is recorded")
	f := failed[0].GetActivityTaskFailedEventAttributes().GetFailure()
	assert.Equal(t, "Encoded failure", f.GetMessage(), "the failure's message is in its encoded attributes")
	assert.Equal(t, "cxkey1", string(f.GetEncodedAttributes().GetMetadata()[codec.MetadataKeyID]))

	// The state query's answer is a payload: encrypted on the way, readable
	// with the keys only.
	_, err := querySnapshot(context.Background(), temporalServer.Client(), id)
	assert.ErrorContains(t, err, "the session is encrypted; set REPLYFLOW_CODEC_KEYS", "a client without the keys cannot read the state")
	_, err = querySnapshot(context.Background(), s.client, id)
	assert.NoError(t, err)

	srv := codecHTTP(t, cfg.CodecKeys, "cx-token")
	decoded := decodeOverHTTP(t, srv.URL+"/default/decode", "Bearer cx-token", payloadsIn(history), http.StatusOK)
	for _, secret := range []string{text, reply, failure} {
		assert.Contains(t, decoded, secret, "the codec server decodes the history")
	}
	refused := decodeOverHTTP(t, srv.URL+"/default/decode", "", payloadsIn(history), http.StatusUnauthorized)
	assert.Contains(t, refused, "no Authorization header")
	assert.NotContains(t, refused, unique)
}

// A local activity's failure (the first chunk sent in the workflow task,
// a reaction) is recorded in a marker, not in an activity event: its
// message and causes, a platform's error text with internal addresses in
// it, are encrypted like every other failure's, and the holder of the
// keys reads them back.
func TestCodecKeepsLocalActivityFailuresOutOfHistory(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.CodecKeys = codecKeyEntry(t, "cxla1")
	cfg, fake := withTelegram(t, cfg)
	s := &telegramStack{stack: startStackOn(t, cfg, dialWithCodec(t, cfg)), fake: fake}
	s.waitTelegramUp()
	s.startWorker(&testModel{})
	unique := randomToken()[:12]
	leak := "http://10.0.7.7/internal/" + unique
	chat := telegramtest.Private(uniqueTelegramID())
	s.fake.FailNext("sendMessage", 1, telegramtest.Fault{Status: http.StatusBadGateway, Description: "Bad Gateway: upstream " + leak + " send"})
	s.fake.FailNext("setMessageReaction", 1, telegramtest.Fault{Status: http.StatusBadGateway, Description: "Bad Gateway: upstream " + leak + " react"})

	s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "hello"})
	waitFor(t, s.fake, "the answer, sent the regular way after the local attempt", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	waitFor(t, s.fake, "both faults answered", func() bool {
		failed := 0
		for _, m := range []string{"sendMessage", "setMessageReaction"} {
			for _, c := range s.fake.Calls(m) {
				if strings.Contains(c.Description, unique) {
					failed++
				}
			}
		}
		return failed == 2
	})
	id := tgKey(chat).WorkflowID()
	var history []*historypb.HistoryEvent
	require.Eventually(t, func() bool {
		history = sessionHistory(t, temporalServer.Client(), id)
		return len(markerFailures(history)) == 2
	}, 30*time.Second, 100*time.Millisecond, "the failed delivery and reaction are recorded in markers")

	raw := rawHistory(t, history)
	assert.NotContains(t, raw, unique, "a local activity's failure in clear in the history")
	assert.NotContains(t, raw, "10.0.7.7")
	dc, err := codec.DataConverter(mustParseKeys(t, cfg.CodecKeys), false)
	require.NoError(t, err)
	fc := codec.FailureConverter(dc)
	for _, f := range markerFailures(history) {
		for c := f; c != nil; c = c.GetCause() {
			assert.Equal(t, "Encoded failure", c.GetMessage(), "each failure of the chain has its message encoded")
			assert.Empty(t, c.GetStackTrace())
			assert.Equal(t, "cxla1", string(c.GetEncodedAttributes().GetMetadata()[codec.MetadataKeyID]))
		}
		assert.Contains(t, fc.FailureToError(f).Error(), leak, "the keys read the failure back")
	}
	assert.Empty(t, eventsOf(history, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED))

	srv := codecHTTP(t, cfg.CodecKeys, "cx-token")
	decoded := decodeOverHTTP(t, srv.URL+"/default/decode", "Bearer cx-token", payloadsIn(history), http.StatusOK)
	assert.Contains(t, decoded, leak+" send", "the codec server decodes the delivery's failure")
	assert.Contains(t, decoded, leak+" react", "and the reaction's")
}

// A session recorded in clear text, then with key k1, then after the
// rotation to "k2,k1" stays one conversation: each phase is answered, the
// old payloads still decode, and the new ones carry k2.
func TestCodecKeyRotationKeepsTheSessionReadable(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	chat := uniqueChat("cx-rotation")
	id := pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()
	k1, k2 := codecKeyEntry(t, "cxk1"), codecKeyEntry(t, "cxk2")
	unique := randomToken()[:12]
	texts := make([]string, 3)
	for phase, keys := range []string{"", k1, k2 + "," + k1} {
		cfg.CodecKeys = keys
		require.NoError(t, cfg.validate())
		c := temporalServer.Client()
		if keys != "" {
			c = dialWithCodec(t, cfg)
		}
		s := startStackOn(t, cfg, c)
		stopWorker := s.startWorker(&testModel{})
		texts[phase] = fmt.Sprintf("cx phase %d %s", phase, unique)
		events := subscribe(t, s.baseURL, chat)
		messageID := fmt.Sprintf("r%d", phase)
		code, body := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":"alice","text":%q}`, messageID, texts[phase]))
		require.Equal(t, http.StatusAccepted, code, body)
		seen := events.collectUntil(t, 60*time.Second, isReplyTo(messageID))
		require.Equal(t, "You said: "+texts[phase], lastText(seen), "phase %d is answered", phase)
		events.collectUntil(t, 30*time.Second, isClearOf(messageID))
		stopWorker()
		s.stopGateway()
	}

	history := sessionHistory(t, temporalServer.Client(), id)
	raw := rawHistory(t, history)
	assert.Contains(t, raw, texts[0], "recorded before encryption: in clear (so this check can see clear text)")
	assert.NotContains(t, raw, texts[1])
	assert.NotContains(t, raw, texts[2])

	rotated, err := codec.ParseKeys(k2 + "," + k1)
	require.NoError(t, err)
	c, err := codec.New(rotated)
	require.NoError(t, err)
	keyOf := map[int][]string{}
	for _, p := range payloadsIn(history) {
		opened, err := c.Decode([]*commonpb.Payload{p})
		require.NoError(t, err, "every payload decodes with the rotated keys")
		for phase, text := range texts {
			if strings.Contains(string(opened[0].GetData()), text) {
				keyOf[phase] = append(keyOf[phase], string(p.GetMetadata()[codec.MetadataKeyID]))
			}
		}
	}
	assert.Contains(t, keyOf[1], "cxk1", "phase 1's payloads were sealed with k1")
	require.NotEmpty(t, keyOf[2])
	for _, id := range keyOf[2] {
		assert.Equal(t, "cxk2", id, "after the rotation, new payloads are sealed with k2")
	}

	newOnly, err := codec.ParseKeys(k2)
	require.NoError(t, err)
	withoutK1, err := codec.New(newOnly)
	require.NoError(t, err)
	_, err = withoutK1.Decode(payloadsIn(history))
	require.ErrorIs(t, err, codec.ErrUnknownKey, "dropping k1 too soon makes the old payloads unreadable")
	assert.Contains(t, err.Error(), `"cxk1"`)

	decoded := decodeOverHTTP(t, codecHTTP(t, k2+","+k1, "cx-token").URL+"/default/decode", "Bearer cx-token", payloadsIn(history), http.StatusOK)
	for _, text := range texts {
		assert.Contains(t, decoded, text)
	}
}

// dialWithCodec is a client of the test server made as replyflow makes
// its own (dialTemporal), so it encrypts with cfg's codec keys.
func dialWithCodec(t *testing.T, cfg Config) client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	registerConfigSecrets(cfg)
	c, err := dialTemporal(ctx, cfg, temporalServer.FrontendHostPort(), testLogger(t, "info"))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// codecKeyEntry is a new random key as a REPLYFLOW_CODEC_KEYS entry.
func codecKeyEntry(t *testing.T, id string) string {
	secret := make([]byte, codec.KeySize)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	entry := id + ":" + base64.StdEncoding.EncodeToString(secret)
	registerSecret("codec key", entry)
	return entry
}

// failingPrimary fails the primary model as a provider that echoes its
// input in an error would; every other model is backup.
type failingPrimary struct {
	primary, failure string
	backup           models.Model
}

func (f failingPrimary) Get(name string) (models.Model, error) {
	if name == f.primary {
		return failingModel(f), nil
	}
	return f.backup, nil
}

type failingModel failingPrimary

func (m failingModel) Name() string { return m.primary }

func (m failingModel) Complete(context.Context, models.Prompt) (models.Completion, error) {
	return models.Completion{}, &models.Error{Type: pipeline.ErrAuth, Model: m.primary, Err: errors.New(m.failure)}
}

// sessionHistory is every event of every run of the session, oldest
// first, followed back through continue-as-new.
func sessionHistory(t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var all []*historypb.HistoryEvent
	for runID := ""; ; {
		var run []*historypb.HistoryEvent
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			run = append(run, ev)
		}
		require.NotEmpty(t, run)
		all = append(run, all...)
		runID = run[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId()
		if runID == "" {
			return all
		}
	}
}

// rawHistory is the events as stored and as the UI's JSON shows them:
// binary protobuf (payload bytes as they are) and protojson (strings).
func rawHistory(t *testing.T, events []*historypb.HistoryEvent) string {
	var b strings.Builder
	for _, ev := range events {
		wire, err := proto.Marshal(ev)
		require.NoError(t, err)
		text, err := protojson.Marshal(ev)
		require.NoError(t, err)
		b.Write(wire)
		b.Write(text)
	}
	return b.String()
}

func eventsOf(events []*historypb.HistoryEvent, typ enumspb.EventType) []*historypb.HistoryEvent {
	var out []*historypb.HistoryEvent
	for _, ev := range events {
		if ev.GetEventType() == typ {
			out = append(out, ev)
		}
	}
	return out
}

// markerFailures are the failures of the local activities recorded in
// the events' markers.
func markerFailures(events []*historypb.HistoryEvent) []*failurepb.Failure {
	var out []*failurepb.Failure
	for _, ev := range eventsOf(events, enumspb.EVENT_TYPE_MARKER_RECORDED) {
		if f := ev.GetMarkerRecordedEventAttributes().GetFailure(); f != nil {
			out = append(out, f)
		}
	}
	return out
}

func mustParseKeys(t *testing.T, entries string) []codec.Key {
	keys, err := codec.ParseKeys(entries)
	require.NoError(t, err)
	return keys
}

// payloadsIn finds every payload anywhere in the events: inputs, results,
// signals, summaries, failures' encoded attributes, search attributes.
func payloadsIn(events []*historypb.HistoryEvent) []*commonpb.Payload {
	var out []*commonpb.Payload
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		if p, ok := m.Interface().(*commonpb.Payload); ok {
			out = append(out, p)
			return
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				for i := range v.List().Len() {
					walk(v.List().Get(i).Message())
				}
			case fd.IsMap() && fd.MapValue().Message() != nil:
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					walk(mv.Message())
					return true
				})
			case !fd.IsMap() && fd.Message() != nil:
				walk(v.Message())
			}
			return true
		})
	}
	for _, ev := range events {
		walk(ev.ProtoReflect())
	}
	return out
}

// codecHTTP serves replyflow's codec handler with keys and token.
func codecHTTP(t *testing.T, keys, token string) *httptest.Server {
	parsed, err := codec.ParseKeys(keys)
	require.NoError(t, err)
	codecs, err := codec.Codecs(parsed, false)
	require.NoError(t, err)
	h, err := codec.NewHandler(codecs, codec.HandlerOptions{Token: token})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// decodeOverHTTP posts payloads as the UI does and returns the answer:
// the decoded payloads' data joined, or the body of a refusal.
func decodeOverHTTP(t *testing.T, url, auth string, payloads []*commonpb.Payload, wantStatus int) string {
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, wantStatus, resp.StatusCode, string(answer))
	if resp.StatusCode != http.StatusOK {
		return string(answer)
	}
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(answer, &decoded))
	require.Len(t, decoded.Payloads, len(payloads))
	var b strings.Builder
	for _, p := range decoded.Payloads {
		b.Write(p.GetData())
	}
	return b.String()
}
