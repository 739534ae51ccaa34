package agentcore

// Param is one conversation parameter value.
type Param struct {
	Value any
	// SendToModel false hides the value from every model; tools still see
	// it.
	SendToModel bool
	// Trusted values come from the token, never from a model or caller.
	Trusted bool
}

// Params are the conversation parameters of a run, by name. A nil *Params
// has none.
type Params struct {
	values map[string]Param
}

// NewParams returns parameters holding values.
func NewParams(values map[string]Param) *Params {
	m := make(map[string]Param, len(values))
	for k, v := range values {
		m[k] = v
	}
	return &Params{values: m}
}

// Get returns a parameter by name.
func (p *Params) Get(name string) (Param, bool) {
	if p == nil {
		return Param{}, false
	}
	v, ok := p.values[name]
	return v, ok
}

// Names lists the parameter names.
func (p *Params) Names() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.values))
	for k := range p.values {
		out = append(out, k)
	}
	return out
}
