//go:build !(cgo && verbs)

package verify

import (
	"context"
	"fmt"
)

// verbsBuiltIn says whether this binary can run verbs traffic.
const verbsBuiltIn = false

// Loopback needs libibverbs: this build has none (see ErrVerbsNotBuiltIn).
func Loopback(ctx context.Context, cfg LoopbackConfig) (*LoopbackResult, error) {
	return nil, fmt.Errorf("verbs loopback on %s port %d: %w", cfg.Device, max(cfg.Port, 1), ErrVerbsNotBuiltIn)
}

func openRCEndpoint(cfg LoopbackConfig) (rcEndpoint, error) {
	return nil, fmt.Errorf("verbs two-host on %s port %d: %w", cfg.Device, cfg.Port, ErrVerbsNotBuiltIn)
}
