//go:build !(cgo && verbs)

package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

const notBuiltInText = "verbs support not built in (build with -tags verbs and libibverbs-dev)"

func TestStubLoopbackNotBuiltIn(t *testing.T) {
	res, err := Loopback(context.Background(), LoopbackConfig{Device: "mlx5_0", GIDIndex: 3})
	if res != nil || !errors.Is(err, ErrVerbsNotBuiltIn) {
		t.Fatalf("got %v, %v; want nil, ErrVerbsNotBuiltIn", res, err)
	}
	if want := "verbs loopback on mlx5_0 port 1: " + notBuiltInText; err.Error() != want {
		t.Errorf("message\n got %q\nwant %q", err.Error(), want)
	}
}

func TestStubTwoHostNotBuiltIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Listen must refuse at once, not wait for a peer it could not serve.
	_, err := Listen(ctx, "127.0.0.1:0", LoopbackConfig{Device: "mlx5_0"})
	if !errors.Is(err, ErrVerbsNotBuiltIn) || ctx.Err() != nil {
		t.Errorf("Listen: %v (ctx %v), want ErrVerbsNotBuiltIn at once", err, ctx.Err())
	}
	// Connect fails before dialling: nothing listens on TEST-NET-1.
	_, err = Connect(ctx, "192.0.2.1:9", LoopbackConfig{Device: "mlx5_0"})
	if !errors.Is(err, ErrVerbsNotBuiltIn) || !strings.Contains(err.Error(), notBuiltInText) || ctx.Err() != nil {
		t.Errorf("Connect: %v (ctx %v), want ErrVerbsNotBuiltIn at once", err, ctx.Err())
	}
}
