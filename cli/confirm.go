package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
)

// A --confirm deadline must not depend on the applying process staying
// alive. It is persisted in the journal (honoured by every later rocectl
// apply/rollback and by the agent) and armed outside this process: as a
// transient systemd timer when systemd runs the host (what `systemd-run
// --on-active` creates), else as a detached watcher process in its own
// session.

func confirmUnit(id string) string { return "rocectl-confirm-" + id }

// globalArgs are the global flags a later rocectl (the confirm timer or
// watcher) needs to act on the same host and state, and to keep as many
// journals.
func (env *Env) globalArgs() []string {
	args := []string{"--state-dir", env.StateDir, "--root", env.Root}
	if env.KeepJournals > 0 {
		args = append(args, "--keep-journals", strconv.Itoa(env.KeepJournals))
	}
	return args
}

func (env *Env) armConfirm(ctx context.Context, j *apply.Journal, deadline time.Time) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if how, err := armSystemdTimer(ctx, exe, env.globalArgs(), j.ID, time.Until(deadline)); err == nil {
		return how, nil
	} else {
		env.Log.Debug("no systemd timer for the confirm deadline; starting a watcher process", "reason", err)
	}
	args := append(env.globalArgs(), "confirm-watch", j.ID)
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	logf, err := os.OpenFile(env.Store().WatcherLog(j.ID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return fmt.Sprintf("watcher pid %d", pid), nil
}

func armSystemdTimer(ctx context.Context, exe string, global []string, id string, after time.Duration) (string, error) {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return "", errors.New("systemd is not running this host")
	}
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	name := confirmUnit(id)
	cmdline := append(append([]string{exe}, global...), "rollback", "--if-pending", id)
	svc := []sddbus.Property{
		sddbus.PropDescription("rocectl: revert apply " + id + " unless committed"),
		sddbus.PropType("oneshot"),
		sddbus.PropExecStart(cmdline, false),
	}
	timer := []sddbus.Property{
		sddbus.PropDescription("rocectl confirm deadline for apply " + id),
		{Name: "RemainAfterElapse", Value: godbus.MakeVariant(false)},
		{Name: "TimersMonotonic", Value: godbus.MakeVariant([]struct {
			Base string
			USec uint64
		}{{"OnActiveUSec", uint64(after.Microseconds())}})},
	}
	ch := make(chan string, 1)
	if _, err := conn.StartTransientUnitAux(ctx, name+".timer", "fail", timer,
		[]sddbus.PropertyCollection{{Name: name + ".service", Properties: svc}}, ch); err != nil {
		return "", err
	}
	select {
	case res := <-ch:
		if res != "done" {
			return "", fmt.Errorf("starting %s.timer: %s", name, res)
		}
	case <-time.After(10 * time.Second):
		return "", fmt.Errorf("starting %s.timer: no answer from systemd", name)
	}
	return "systemd timer " + name + ".timer", nil
}

// disarmConfirm stops the timer of a settled apply (best effort: the timer's
// action checks the journal and does nothing once it is committed).
func disarmConfirm(ctx context.Context, j *apply.Journal) {
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		return
	}
	conn, err := sddbus.NewSystemConnectionContext(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = conn.StopUnitContext(ctx, confirmUnit(j.ID)+".timer", "replace", nil)
}

// newConfirmWatchCmd is the detached watcher: it sleeps until the deadline,
// leaving early if the apply is settled, then reverts it if still pending.
func newConfirmWatchCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:    "confirm-watch ID",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store := env.Store()
			for {
				j, err := store.Load(args[0])
				if err != nil {
					return err
				}
				if j.State != apply.StateConfirmPending || j.Deadline == nil {
					return nil
				}
				wait := time.Until(*j.Deadline)
				if wait <= 0 {
					break
				}
				select {
				case <-cmd.Context().Done():
					return cmd.Context().Err()
				case <-time.After(min(wait, time.Second)):
				}
			}
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			lock, err := store.AcquireWaiting(cmd.Context(), "confirm-watch "+args[0])
			if err != nil {
				return err
			}
			defer lock.Release()
			return env.rollbackIfExpired(h, store, args)
		},
	}
}
