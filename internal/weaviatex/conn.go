package weaviatex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	wv "github.com/weaviate/weaviate-go-client/v4/weaviate"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/connection"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/grpc"
)

// readyTimeout bounds Dial's first request, so a server that does not
// answer (a wrong host, a dropped packet) fails fast.
const readyTimeout = 10 * time.Second

// Config says where the server is and how to reach it.
type Config struct {
	// URL is the REST endpoint, e.g. http://localhost:8080 (no path).
	URL string
	// APIKey, when set, is sent as a bearer token. It never appears in
	// errors.
	APIKey string `json:"-"`
	// GRPCAddr, when set (host:port), lets the client send batch writes
	// over gRPC. Refused with an https URL: the client (v4.16.1) does not
	// verify the gRPC server's certificate.
	GRPCAddr string
	// Timeout bounds each request of the client; 0 is the client's
	// default.
	Timeout time.Duration
}

// Conn is a checked connection: the Go client, and the server's URL
// without credentials for messages.
type Conn struct {
	Client *wv.Client // nil after Close
	Where  string
}

// CheckURL checks that raw is http(s)://host:port with no path or
// credentials and returns it as scheme://host, for messages.
func CheckURL(raw string) (where string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" {
		return "", fmt.Errorf("weaviate URL %q: want http(s)://host:port with no path or credentials", RedactURL(raw))
	}
	return u.Scheme + "://" + u.Host, nil
}

// RedactURL drops a password from a URL for messages.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// Dial makes a client for cfg and checks that the server answers and is
// recent enough (1.25 or later: automatic tenants). A server that does not
// answer or is not ready yet is a [NotReadyError].
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	where, err := CheckURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL)
	wcfg := wv.Config{Host: u.Host, Scheme: u.Scheme, Timeout: cfg.Timeout}
	if cfg.APIKey != "" {
		// The header auth.ApiKey would add, set directly: with an
		// AuthConfig, NewClient makes a second connection whose finalizer
		// (see Close) cannot be removed.
		wcfg.Headers = map[string]string{"Authorization": "Bearer " + cfg.APIKey}
	}
	if cfg.GRPCAddr != "" {
		if u.Scheme == "https" {
			return nil, errors.New("weaviate: GRPCAddr with an https URL is refused: the client does not verify the gRPC server's certificate; leave GRPCAddr empty to write over REST")
		}
		wcfg.GrpcConfig = &grpc.Config{Host: cfg.GRPCAddr}
	}
	client, err := wv.NewClient(wcfg) // StartupTimeout 0: no waiting, no request yet
	if err != nil {
		return nil, fmt.Errorf("weaviate at %s: %w", where, err)
	}
	c := &Conn{Client: client, Where: where}
	if err := c.checkServer(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkServer fails with a message naming the URL when the server does not
// answer or is too old for automatic tenants.
func (c *Conn) checkServer(ctx context.Context) error {
	probe, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ready, err := c.Client.Misc().ReadyChecker().Do(probe)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &NotReadyError{fmt.Errorf("weaviate at %s does not answer (%v): check the URL and that the server is running and reachable from here", c.Where, unwrapClient(err))}
	}
	if !ready {
		return &NotReadyError{fmt.Errorf("weaviate at %s answers but is not ready (/v1/.well-known/ready): wait for it to finish starting, or check its log", c.Where)}
	}
	m, err := c.Client.Misc().MetaGetter().Do(ctx)
	if err != nil {
		return c.Fail(ctx, "read server version", err)
	}
	if !versionAtLeast(m.Version, 1, 25) {
		return fmt.Errorf("weaviate at %s is version %s; Hindsight needs 1.25 or later (automatic tenant creation)", c.Where, m.Version)
	}
	return nil
}

// NotReadyError is the server not answering, or still starting: it may
// answer later (a caller may keep trying).
type NotReadyError struct{ Err error }

func (e *NotReadyError) Error() string { return e.Err.Error() }
func (e *NotReadyError) Unwrap() error { return e.Err }

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// Close lets the client's connection be collected. weaviate-go-client
// v4.16.1 sets a finalizer on its REST connection that sends on an
// unbuffered channel nobody receives from (unless an OIDC token refresher
// runs), which would block the runtime's finalizer goroutine, and with it
// every later finalizer in the process, once a closed client is collected.
// The client has no Close, so Close removes that finalizer
// (vectors/weaviate's TestCloseLetsFinalizersRun notices when a client
// upgrade breaks this). Safe to call twice.
func (c *Conn) Close() {
	if c.Client == nil {
		return
	}
	f := reflect.ValueOf(c.Client).Elem().FieldByName("connection")
	if f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil() {
		runtime.SetFinalizer((*connection.Connection)(unsafe.Pointer(f.Pointer())), nil)
	}
	c.Client = nil
}

// Fail wraps an error of the client with the operation and the URL, or
// returns ctx's error when ctx ended (see [FailAt]).
func (c *Conn) Fail(ctx context.Context, op string, err error) error {
	return FailAt(ctx, c.Where, op, err)
}

// Get runs {Get{<class>(<args>){<fields>}}} and decodes the list of objects
// into into. Quote strings in args with [GQLString] and vectors with
// [GQLVector]: queries are written here rather than with the client's
// builders because those quote strings with Go's %q, whose \x and \U
// escapes GraphQL does not read.
func (c *Conn) Get(ctx context.Context, class, args, fields string, into any) error {
	q := fmt.Sprintf("{Get{%s(%s){%s}}}", class, args, fields)
	resp, err := c.Client.GraphQL().Raw().WithQuery(q).Do(ctx)
	if err != nil {
		return c.Fail(ctx, "query", err)
	}
	if len(resp.Errors) > 0 {
		msgs := make([]string, 0, len(resp.Errors))
		for _, e := range resp.Errors {
			msgs = append(msgs, e.Message)
		}
		return fmt.Errorf("query weaviate at %s: %s", c.Where, strings.Join(msgs, "; "))
	}
	get, ok := resp.Data["Get"].(map[string]any)
	if !ok {
		return fmt.Errorf("query weaviate at %s: reply without Get", c.Where)
	}
	raw, err := json.Marshal(get[class])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("query weaviate at %s: decode reply: %w", c.Where, err)
	}
	return nil
}
