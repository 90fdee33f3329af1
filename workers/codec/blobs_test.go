package codec

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBlobsSealOpenAndRefuseAWrongKeyOrPlace(t *testing.T) {
	k1, k2 := testKey(t, "k1"), testKey(t, "k2")
	b, err := NewBlobs([]Key{k1})
	require.NoError(t, err)
	sealed, err := b.Seal([]byte(secretText), "row-a")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(sealed, BlobPrefix+"k1:"))
	assert.NotContains(t, sealed, "4111")
	plain, err := b.Open(sealed, "row-a")
	require.NoError(t, err)
	assert.Equal(t, secretText, string(plain))

	_, err = b.Open(sealed, "row-b")
	require.Error(t, err, "moved to another row")
	assert.Contains(t, err.Error(), "does not authenticate")

	other, err := NewBlobs([]Key{k2})
	require.NoError(t, err)
	_, err = other.Open(sealed, "row-a")
	require.True(t, errors.Is(err, ErrUnknownKey), "%v", err)

	forged, err := NewBlobs([]Key{mustKey(t, "k1", k2)})
	require.NoError(t, err)
	_, err = forged.Open(sealed, "row-a")
	require.Error(t, err, "same key ID, other material")
	assert.Contains(t, err.Error(), `key "k1" is not the key it was sealed with`)

	clear, err := b.Open("written before encryption", "row-a")
	require.NoError(t, err)
	assert.Equal(t, "written before encryption", string(clear))
}

// mustKey is key k's material under another ID.
func mustKey(t *testing.T, id string, k Key) Key {
	t.Helper()
	out, err := NewKey(id, k.secret)
	require.NoError(t, err)
	return out
}
