package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"google.golang.org/grpc"

	"github.com/replyflow/replyflow/workflows"
)

// SearchAttributeLister is the part of the operator service the check
// needs; client.Client's OperatorService() is the real one.
type SearchAttributeLister interface {
	ListSearchAttributes(ctx context.Context, req *operatorservice.ListSearchAttributesRequest, opts ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error)
}

// searchAttributeCheckTimeout bounds the check at a worker's start.
const searchAttributeCheckTimeout = 10 * time.Second

// CheckSearchAttributes fails when the namespace lacks one of replyflow's
// search attributes, or has it with another type: a session that sets
// an unknown attribute fails its workflow task, again and again, so a
// worker does not start beside such a namespace. The error names what is
// missing and the command that registers it. A server that does not let
// this worker list them (no operator permission) is logged and passed:
// the operator answers for the registration there.
func CheckSearchAttributes(ctx context.Context, ops SearchAttributeLister, namespace string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, searchAttributeCheckTimeout)
	defer cancel()
	resp, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		var denied *serviceerror.PermissionDenied
		var unimplemented *serviceerror.Unimplemented
		if errors.As(err, &denied) || errors.As(err, &unimplemented) {
			logger.Warn("Could not check replyflow's search attributes on the namespace; make sure they are registered (deploy/README.md)", "namespace", namespace, "error", err)
			return nil
		}
		return fmt.Errorf("list the search attributes of namespace %s: %w", namespace, err)
	}
	var missing, args []string
	for _, sa := range workflows.SearchAttributes() {
		name, kind, _ := strings.Cut(sa, "=")
		want := enumspb.IndexedValueType(enumspb.IndexedValueType_value["INDEXED_VALUE_TYPE_"+strings.ToUpper(kind)])
		got, ok := resp.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing = append(missing, name)
			args = append(args, "--name "+name+" --type "+kind)
		case got != want:
			return fmt.Errorf("search attribute %s on namespace %s is %s, replyflow needs %s: remove it (temporal operator search-attribute remove --name %s) and register it again",
				name, namespace, strings.TrimPrefix(got.String(), "INDEXED_VALUE_TYPE_"), kind, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("namespace %s lacks replyflow's search attributes %s: sessions would fail when they set them; register them first: temporal operator search-attribute create --namespace %s %s",
		namespace, strings.Join(missing, ", "), namespace, strings.Join(args, " "))
}
