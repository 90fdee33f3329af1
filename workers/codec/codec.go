package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/proto"
)

// Metadata of an encrypted payload: its encoding, and the ID of the key
// that sealed it (the one that opens it).
const (
	EncodingEncrypted = "binary/encrypted"
	MetadataKeyID     = "encryption-key-id"
)

// ErrUnknownKey is wrapped by Decode's error for a payload sealed with a
// key that is not configured.
var ErrUnknownKey = errors.New("encrypted with a key that is not configured")

// Codec is a converter.PayloadCodec that seals each payload whole (its
// metadata and data) with AES-256-GCM: a random 12-byte nonce, then the
// ciphertext, with the key ID as additional data, so a payload cannot be
// passed off as sealed by another key.
type Codec struct {
	encryptWith string
	ids         []string
	aeads       map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New builds a codec: keys[0] encrypts, every key decrypts.
func New(keys []Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("no codec key: set %s (%s)", EnvKeys, keyHint)
	}
	c := &Codec{encryptWith: keys[0].ID, ids: KeyIDs(keys), aeads: map[string]cipher.AEAD{}}
	for _, k := range keys {
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("codec key ID %q appears twice; give each key its own ID", k.ID)
		}
		block, err := aes.NewCipher(k.secret)
		if err != nil {
			return nil, fmt.Errorf("codec key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec key %q: %w", k.ID, err)
		}
		c.aeads[k.ID] = aead
	}
	return c, nil
}

// KeyID is the ID of the key new payloads are sealed with.
func (c *Codec) KeyID() string { return c.encryptWith }

// Encode seals every payload with the first key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.encryptWith]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt a payload: marshal it: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("encrypt a payload: make a nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:              []byte(c.encryptWith),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(c.encryptWith)),
		}
	}
	return out, nil
}

// Decode opens the encrypted payloads with the key each names and passes
// the others through unchanged: payloads recorded before encryption was
// turned on stay readable.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		opened, err := c.open(p)
		if err != nil {
			return nil, err
		}
		out[i] = opened
	}
	return out, nil
}

func (c *Codec) open(p *commonpb.Payload) (*commonpb.Payload, error) {
	id, ok := p.GetMetadata()[MetadataKeyID]
	if !ok {
		return nil, fmt.Errorf("decrypt a payload: it is %s but names no key (no %s metadata)", EncodingEncrypted, MetadataKeyID)
	}
	aead, ok := c.aeads[string(id)]
	if !ok {
		return nil, fmt.Errorf("decrypt a payload: %w: key ID %q (configured: %s); add that key to %s, after the current one",
			ErrUnknownKey, clip(string(id)), strings.Join(c.ids, ", "), EnvKeys)
	}
	data := p.GetData()
	if len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("decrypt a payload sealed with key %q: it is %d bytes, too short to be one", id, len(data))
	}
	plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], id)
	if err != nil {
		return nil, fmt.Errorf("decrypt a payload sealed with key %q: it does not authenticate (it was changed, or key %q is not the key it was sealed with)", id, id)
	}
	var inner commonpb.Payload
	if err := proto.Unmarshal(plain, &inner); err != nil {
		return nil, fmt.Errorf("decrypt a payload sealed with key %q: its content is not a payload: %w", id, err)
	}
	return &inner, nil
}

// clip keeps an untrusted key ID short in a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Codecs are the payload codecs in converter order: encryption, then
// zlib, so that payloads are compressed before they are encrypted
// (ciphertext does not compress). Without compress, zlib only decodes:
// payloads compressed while it was on stay readable.
func Codecs(keys []Key, compress bool) ([]converter.PayloadCodec, error) {
	sealer, err := New(keys)
	if err != nil {
		return nil, err
	}
	zlib := converter.NewZlibCodec(converter.ZlibCodecOptions{})
	if !compress {
		zlib = decodeOnly{zlib}
	}
	return []converter.PayloadCodec{sealer, zlib}, nil
}

// decodeOnly is a codec that decodes and never encodes.
type decodeOnly struct{ converter.PayloadCodec }

func (decodeOnly) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return payloads, nil
}

// DataConverter is the SDK's default converter with every payload
// encrypted (and compressed first, if compress).
func DataConverter(keys []Key, compress bool) (converter.DataConverter, error) {
	codecs, err := Codecs(keys, compress)
	if err != nil {
		return nil, err
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codecs...), nil
}

// FailureConverter moves failures' messages and stack traces, and those
// of their causes, into a payload encoded by dc, so they are encrypted
// too; the history keeps only "Encoded failure" and the failure's type.
func FailureConverter(dc converter.DataConverter) converter.FailureConverter {
	return readsACopy{temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
		EncodeCommonAttributes: true,
		DataConverter:          dc,
	})}
}

// readsACopy reads a failure into an error from a copy. The SDK's
// converter decrypts the message and stack trace of the failure it is
// given, and of its causes, in place; a local activity's failure is also
// the one the SDK has put in the marker it sends to the server when the
// workflow task completes, so reading the original would record that
// marker in clear text.
type readsACopy struct{ converter.FailureConverter }

func (r readsACopy) FailureToError(failure *failurepb.Failure) error {
	if failure == nil {
		return nil
	}
	return r.FailureConverter.FailureToError(proto.Clone(failure).(*failurepb.Failure))
}

// SetOn makes a client (and the workers built on it, which inherit its
// converters) encrypt every payload and failure with keys.
func SetOn(opts *client.Options, keys []Key, compress bool) error {
	dc, err := DataConverter(keys, compress)
	if err != nil {
		return err
	}
	opts.DataConverter = dc
	opts.FailureConverter = FailureConverter(dc)
	return nil
}
