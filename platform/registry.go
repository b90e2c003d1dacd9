package platform

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Factory builds a platform from its configuration.
type Factory func(cfg Config) (Platform, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a platform available by name. It is meant to be called from
// the platform package's init and panics on an empty name, a nil factory or a
// name registered twice: each is a programming error.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" {
		panic("platform: Register with an empty name")
	}
	if f == nil {
		panic("platform: Register " + name + " with a nil factory")
	}
	if _, dup := registry[name]; dup {
		panic("platform: Register called twice for " + name)
	}
	registry[name] = f
}

// Lookup returns the factory registered under name.
func Lookup(name string) (Factory, error) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok := registry[name]
	if !ok {
		known := "none"
		if names := namesLocked(); len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("%w: %q (registered: %s) (forgotten import?)", ErrUnknown, name, known)
	}
	return f, nil
}

// Names lists the registered platforms, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Open looks a platform up and builds it.
func Open(name string, cfg Config) (Platform, error) {
	f, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	p, err := f(cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}
