package codec

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

const secretText = "my card number is 4111 1111 1111 1111"

func dataConverter(t testing.TB, compress bool, keys ...Key) converter.DataConverter {
	t.Helper()
	dc, err := DataConverter(keys, compress)
	require.NoError(t, err)
	return dc
}

func TestPayloadsAreEncryptedAndNameTheirKey(t *testing.T) {
	dc := dataConverter(t, false, testKey(t, "k1"))
	p, err := dc.ToPayload(secretText)
	require.NoError(t, err)
	assert.Equal(t, EncodingEncrypted, string(p.Metadata[converter.MetadataEncoding]))
	assert.Equal(t, "k1", string(p.Metadata[MetadataKeyID]))
	assert.Len(t, p.Metadata, 2, "the inner encoding (json/plain) is sealed too")
	raw, err := proto.Marshal(p)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "4111", "no clear text in the stored payload")

	var back string
	require.NoError(t, dc.FromPayload(p, &back))
	assert.Equal(t, secretText, back)

	again, err := dc.ToPayload(secretText)
	require.NoError(t, err)
	assert.NotEqual(t, p.Data, again.Data, "a fresh nonce each time: equal texts do not look equal")
}

func TestRotationNewKeyFirstOldKeysStillDecrypt(t *testing.T) {
	k1, k2 := testKey(t, "k1"), testKey(t, "k2")
	before := dataConverter(t, false, k1)
	after := dataConverter(t, false, k2, k1)

	old, err := before.ToPayload("sent before the rotation")
	require.NoError(t, err)
	var got string
	require.NoError(t, after.FromPayload(old, &got))
	assert.Equal(t, "sent before the rotation", got)

	fresh, err := after.ToPayload("sent after")
	require.NoError(t, err)
	assert.Equal(t, "k2", string(fresh.Metadata[MetadataKeyID]), "the first key encrypts")

	err = before.FromPayload(fresh, &got)
	require.ErrorIs(t, err, ErrUnknownKey)
	assert.Contains(t, err.Error(), `key ID "k2"`)
	assert.Contains(t, err.Error(), "configured: k1")
	assert.Contains(t, err.Error(), "add that key to REPLYFLOW_CODEC_KEYS")
}

func TestChangedPayloadsDoNotDecrypt(t *testing.T) {
	k1, k2 := testKey(t, "k1"), testKey(t, "k2")
	c, err := New([]Key{k1, k2})
	require.NoError(t, err)
	sealed, err := c.Encode([]*commonpb.Payload{{Data: []byte(secretText)}})
	require.NoError(t, err)
	p := sealed[0]

	flipped := proto.Clone(p).(*commonpb.Payload)
	flipped.Data[len(flipped.Data)-1] ^= 1
	_, err = c.Decode([]*commonpb.Payload{flipped})
	assert.ErrorContains(t, err, `sealed with key "k1": it does not authenticate`)

	relabelled := proto.Clone(p).(*commonpb.Payload)
	relabelled.Metadata[MetadataKeyID] = []byte("k2")
	_, err = c.Decode([]*commonpb.Payload{relabelled})
	assert.ErrorContains(t, err, "does not authenticate", "the key ID is authenticated too")

	short := proto.Clone(p).(*commonpb.Payload)
	short.Data = short.Data[:20]
	_, err = c.Decode([]*commonpb.Payload{short})
	assert.ErrorContains(t, err, "too short")

	unnamed := proto.Clone(p).(*commonpb.Payload)
	delete(unnamed.Metadata, MetadataKeyID)
	_, err = c.Decode([]*commonpb.Payload{unnamed})
	assert.ErrorContains(t, err, "names no key")

	got, err := c.Decode([]*commonpb.Payload{p})
	require.NoError(t, err, "the original still decrypts")
	assert.Equal(t, secretText, string(got[0].Data))
}

func TestSameIDWithAnotherKeyFails(t *testing.T) {
	right := testKey(t, "k1")
	wrong, err := NewKey("k1", []byte(strings.Repeat("w", KeySize)))
	require.NoError(t, err)
	p, err := dataConverter(t, false, right).ToPayload(secretText)
	require.NoError(t, err)
	var got string
	err = dataConverter(t, false, wrong).FromPayload(p, &got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `key "k1" is not the key it was sealed with`)
	assert.False(t, errors.Is(err, ErrUnknownKey))
}

func TestPlainPayloadsPassThroughDecode(t *testing.T) {
	plain, err := converter.GetDefaultDataConverter().ToPayload("recorded before encryption")
	require.NoError(t, err)
	c, err := New([]Key{testKey(t, "k1")})
	require.NoError(t, err)
	out, err := c.Decode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	assert.Same(t, plain, out[0], "unchanged")

	var got string
	require.NoError(t, dataConverter(t, true, testKey(t, "k1")).FromPayload(plain, &got))
	assert.Equal(t, "recorded before encryption", got)
}

func TestCompressionHappensBeforeEncryption(t *testing.T) {
	long := strings.Repeat("the same words again and again ", 200)
	k1 := testKey(t, "k1")
	compressed, err := dataConverter(t, true, k1).ToPayload(long)
	require.NoError(t, err)
	uncompressed, err := dataConverter(t, false, k1).ToPayload(long)
	require.NoError(t, err)
	assert.Equal(t, EncodingEncrypted, string(compressed.Metadata[converter.MetadataEncoding]))
	assert.Less(t, len(compressed.Data), len(uncompressed.Data)/10)

	c, err := New([]Key{k1})
	require.NoError(t, err)
	inner, err := c.Decode([]*commonpb.Payload{compressed})
	require.NoError(t, err)
	assert.Equal(t, "binary/zlib", string(inner[0].Metadata[converter.MetadataEncoding]), "zlib inside the encryption")

	var got string
	require.NoError(t, dataConverter(t, true, k1).FromPayload(compressed, &got))
	assert.Equal(t, long, got)
	require.NoError(t, dataConverter(t, true, k1).FromPayload(uncompressed, &got), "turning compression on keeps old payloads readable")
	assert.Equal(t, long, got)
	require.NoError(t, dataConverter(t, false, k1).FromPayload(compressed, &got), "turning it off too")
	assert.Equal(t, long, got)
}

func TestFailuresAreEncryptedToo(t *testing.T) {
	dc := dataConverter(t, false, testKey(t, "k1"))
	fc := FailureConverter(dc)
	f := fc.ErrorToFailure(errors.New("tool failed on " + secretText))
	assert.NotContains(t, f.GetMessage(), "4111")
	assert.NotContains(t, f.GetStackTrace(), "4111")
	assert.Equal(t, "k1", string(f.GetEncodedAttributes().GetMetadata()[MetadataKeyID]))

	back := fc.FailureToError(f)
	assert.Contains(t, back.Error(), secretText)
}

// The SDK keeps the failure it reads a local activity's error from in the
// marker it sends to the server: reading it must leave it encrypted, and
// its causes too.
func TestReadingAFailureLeavesItEncrypted(t *testing.T) {
	dc := dataConverter(t, false, testKey(t, "k1"))
	fc := FailureConverter(dc)
	cause := temporal.NewApplicationError("platform said "+secretText, "PlatformUnavailable")
	f := fc.ErrorToFailure(temporal.NewApplicationErrorWithCause("deliver: "+secretText, "PlatformUnavailable", cause))
	sent := proto.Clone(f)

	back := fc.FailureToError(f)
	assert.Contains(t, back.Error(), secretText)
	var app *temporal.ApplicationError
	require.True(t, errors.As(errors.Unwrap(back), &app))
	assert.Contains(t, app.Error(), "platform said "+secretText, "the cause is read back too")
	assert.True(t, proto.Equal(sent, f), "the failure read is as it was: encrypted")
	for c := f; c != nil; c = c.GetCause() {
		assert.Equal(t, "Encoded failure", c.GetMessage())
	}
}

func TestNoKeysIsAnError(t *testing.T) {
	_, err := DataConverter(nil, false)
	assert.ErrorContains(t, err, "set REPLYFLOW_CODEC_KEYS")
}

// Decode never panics, whatever arrives as a payload: from history, from
// the UI through the codec server.
func FuzzDecode(f *testing.F) {
	k1 := testKey(f, "k1")
	c, err := New([]Key{k1, testKey(f, "k2")})
	require.NoError(f, err)
	sealed, err := c.Encode([]*commonpb.Payload{{Data: []byte("seed")}})
	require.NoError(f, err)
	wire, err := proto.Marshal(sealed[0])
	require.NoError(f, err)
	f.Add(sealed[0].Data, "k1", EncodingEncrypted, wire)
	f.Add([]byte{}, "", EncodingEncrypted, []byte{})
	f.Add([]byte("plain"), "k3", "json/plain", []byte{0x0a})
	f.Fuzz(func(t *testing.T, data []byte, keyID, encoding string, raw []byte) {
		p := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encoding), MetadataKeyID: []byte(keyID)}, Data: data}
		out, err := c.Decode([]*commonpb.Payload{p})
		if encoding != EncodingEncrypted {
			require.NoError(t, err)
			assert.Same(t, p, out[0])
		}
		var arbitrary commonpb.Payload
		if proto.Unmarshal(raw, &arbitrary) == nil {
			_, _ = c.Decode([]*commonpb.Payload{&arbitrary})
		}
	})
}
