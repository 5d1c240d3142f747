package child

import (
	"context"
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/wt-tool/wt/core/decision"
)

// forwarded are the signals wt-exec passes to the child's group (docs/design.md, "wt-exec").
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// Catch makes sure the signals a run handles are caught, and sets p.sigs
// and p.stops: it takes the channels Early set up (waiting until they
// catch), else sets them up now. Signals are caught before the child
// exists (wrapper's launch calls Catch before the fork), so none is lost between
// fork and the supervision loop; they wait in the channels until then.
// Taken there rather than before the lease section, Early's set-up (the
// runtime's signal thread and a round trip with it per signal, 0.5 ms and
// more on a busy machine) overlaps the section's reads and writes.
func (p *Proc) Catch() {
	p.caught.Do(func() {
		if p.sigs, p.stops = early.take(); p.sigs == nil {
			p.sigs, p.stops = notifyChannels()
		}
	})
}

// StopCatching ends the catching of signals for a run that ends without a
// child to forward them to.
func (p *Proc) StopCatching() {
	p.Catch()
	signal.Stop(p.sigs)
}

// notifyChannels starts catching the signals a run handles: every one it
// forwards or acts on into sigs, and the stop signals (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT) also into stops.
func notifyChannels() (sigs, stops chan os.Signal) {
	sigs, stops = make(chan os.Signal, 16), make(chan os.Signal, 1)
	signal.Notify(sigs, append([]os.Signal{unix.SIGWINCH, unix.SIGCHLD}, forwarded...)...)
	signal.Notify(stops, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	return sigs, stops
}

// early is signal catching begun as wt-exec starts ([Early]).
var early earlySignals

type earlySignals struct {
	mu          sync.Mutex
	ready       chan struct{} // closed once sigs and stops catch
	sigs, stops chan os.Signal
}

// Early starts catching the signals a run handles, in the background, for
// the first run of this process to take. The first signal.Notify of a
// process starts the Go runtime's signal thread and waits for it (about
// 0.2 ms, a twentieth of a run); begun at wt-exec's start, that wait
// overlaps the reading of the command line. A stop signal that arrives
// from then on is held for the run, which then never starts its command.
func Early() {
	early.mu.Lock()
	defer early.mu.Unlock()
	if early.ready != nil {
		return
	}
	ready := make(chan struct{})
	early.ready = ready
	go func() {
		sigs, stops := notifyChannels()
		early.mu.Lock()
		early.sigs, early.stops = sigs, stops
		early.mu.Unlock()
		close(ready)
	}()
}

// take returns the channels Early set up, once they catch, or nils when
// Early was not called or a run took them already.
func (e *earlySignals) take() (sigs, stops chan os.Signal) {
	e.mu.Lock()
	ready := e.ready
	e.mu.Unlock()
	if ready == nil {
		return nil, nil
	}
	<-ready
	e.mu.Lock()
	defer e.mu.Unlock()
	sigs, stops = e.sigs, e.stops
	e.sigs, e.stops = nil, nil
	return sigs, stops
}

// WatchStart makes the context that a stop signal (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT) cancels before the child starts: it ends a wait for the
// store's lock, and Run's start callback refuses to launch the child once
// it is done, so a signal sent before the child exists means the child
// never exists. The signal also waits in p.sigs, as every signal does, for
// Supervise. The returned function ends the watch.
func (p *Proc) WatchStart() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.Catch()
		select {
		case sig := <-p.stops:
			p.stopSig.Store(sig)
			cancel()
		case <-done:
		}
	}()
	return ctx, func() {
		p.Catch()
		signal.Stop(p.stops)
		close(done)
		cancel()
	}
}

// Stopped is the refusal for a signal that came before the child started.
func (p *Proc) Stopped() error {
	sig, _ := p.stopSig.Load().(unix.Signal)
	return decision.Say(decision.Interrupted, "wt-exec", unix.SignalName(sig)).
		WithHint("nothing of it runs; start it again when you mean to").
		WithFact("signal", int(sig))
}
