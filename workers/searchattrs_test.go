package workers

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc"

	"github.com/replyflow/replyflow/workflows"
)

type fakeAttributes struct {
	attrs map[string]enumspb.IndexedValueType
	err   error
}

func (f fakeAttributes) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return &operatorservice.ListSearchAttributesResponse{CustomAttributes: f.attrs}, f.err
}

func everyAttribute() map[string]enumspb.IndexedValueType {
	out := map[string]enumspb.IndexedValueType{}
	for _, k := range []interface {
		GetName() string
		GetValueType() enumspb.IndexedValueType
	}{workflows.AttrChannel, workflows.AttrChat, workflows.AttrState, workflows.AttrQueueDepth, workflows.AttrPendingProposals,
		workflows.AttrLastInboundAt, workflows.AttrHeldUntil, workflows.AttrHeldReason} {
		out[k.GetName()] = k.GetValueType()
	}
	return out
}

func TestAWorkerRefusesANamespaceWithoutItsSearchAttributes(t *testing.T) {
	ctx := context.Background()
	all := everyAttribute()
	require.Len(t, all, len(workflows.SearchAttributes()), "the test knows every attribute")
	require.NoError(t, CheckSearchAttributes(ctx, fakeAttributes{attrs: all}, "default", slog.Default()))

	older := everyAttribute()
	delete(older, workflows.AttrHeldUntil.GetName())
	delete(older, workflows.AttrHeldReason.GetName())
	err := CheckSearchAttributes(ctx, fakeAttributes{attrs: older}, "prod", slog.Default())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "namespace prod lacks replyflow's search attributes ReplyflowHeldReason, ReplyflowHeldUntil")
	assert.Contains(t, err.Error(), "temporal operator search-attribute create --namespace prod --name ReplyflowHeldUntil --type Datetime --name ReplyflowHeldReason --type Keyword")

	clash := everyAttribute()
	clash[workflows.AttrChat.GetName()] = enumspb.INDEXED_VALUE_TYPE_TEXT
	err = CheckSearchAttributes(ctx, fakeAttributes{attrs: clash}, "default", slog.Default())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ReplyflowChat on namespace default is Text, replyflow needs Keyword")

	assert.NoError(t, CheckSearchAttributes(ctx, fakeAttributes{err: serviceerror.NewPermissionDenied("no operator", "")}, "cloud", slog.Default()),
		"a worker that may not list them starts, and says so")
	assert.Error(t, CheckSearchAttributes(ctx, fakeAttributes{err: serviceerror.NewUnavailable("down")}, "default", slog.Default()))
}
