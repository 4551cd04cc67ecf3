package weaviatex

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
	"github.com/weaviate/weaviate/entities/models"
)

// StatusError is a reply of the server with a status outside 2xx, for a
// caller that speaks REST without the Go client (index/weaviatetext).
type StatusError struct {
	Code int
	Msg  string // the reply's body, trimmed
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Code, e.Msg) }

// IsStatus reports whether err is a reply of the server with the status
// code: a [StatusError] or an error of the Go client.
func IsStatus(err error, code int) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == code
	}
	var ce *fault.WeaviateClientError
	return errors.As(err, &ce) && ce.StatusCode == code
}

// FailAt wraps an error of the Go client with the operation and the server
// (where: its URL without credentials), or returns ctx's error when ctx
// ended (the client's errors do not unwrap to it).
func FailAt(ctx context.Context, where, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%s: %w", op, cerr)
	}
	return fmt.Errorf("%s in weaviate at %s: %v", op, where, unwrapClient(err))
}

// unwrapClient returns the informative part of a client error.
func unwrapClient(err error) error {
	var ce *fault.WeaviateClientError
	if errors.As(err, &ce) {
		if ce.DerivedFromError != nil {
			return unwrapClient(ce.DerivedFromError)
		}
		return fmt.Errorf("status %d: %s", ce.StatusCode, strings.TrimSpace(ce.Msg))
	}
	return err
}

// BatchErrors collects the per-object errors of a batch reply (the first
// five).
func BatchErrors(res []models.ObjectsGetResponse) error {
	var errs []error
	for _, r := range res {
		if r.Result == nil || r.Result.Errors == nil {
			continue
		}
		for _, e := range r.Result.Errors.Error {
			if e != nil {
				errs = append(errs, fmt.Errorf("object %s: %s", r.ID, e.Message))
			}
		}
		if len(errs) >= 5 {
			errs = append(errs, errors.New("..."))
			break
		}
	}
	return errors.Join(errs...)
}
