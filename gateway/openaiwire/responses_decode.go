package openaiwire

// The /v1/responses body decoded by hand, with request_decode.go's
// machinery and on its terms: exactly as encoding/json decodes it, or not
// at all (the caller then asks encoding/json).

var (
	responsesNames = []string{"model", "input", "instructions", "previous_response_id", "conversation", "store",
		"stream", "stream_options", "background", "tools", "tool_choice", "parallel_tool_calls", "max_tool_calls",
		"text", "reasoning", "temperature", "top_p", "presence_penalty", "frequency_penalty", "max_output_tokens",
		"top_logprobs", "service_tier", "truncation", "include", "metadata", "user", "safety_identifier",
		"prompt_cache_key"}
	obfuscationNames        = []string{"include_obfuscation"}
	idNames                 = []string{"id"}
	inputItemNames          = []string{"type", "id", "role", "content", "call_id", "name", "arguments", "output"}
	inputPartNames          = []string{"type", "text", "image_url", "detail", "file_data", "file_id", "file_url", "filename", "refusal"}
	responseToolNames       = []string{"type", "name", "description", "parameters", "strict"}
	responseToolChoiceNames = []string{"type", "name", "mode", "tools"}
	allowedToolNames        = []string{"type", "name"}
	textConfigNames         = []string{"format", "verbosity"}
	textFormatNames         = []string{"type", "name", "description", "schema", "strict"}
)

// decodeResponses decodes body into r, which is zero; false if it gave up.
func decodeResponses(body []byte, r *ResponsesRequest) bool {
	var d wireDecoder
	d.Reset(body)
	d.responsesRequest(r)
	return d.End()
}

func (d *wireDecoder) responsesRequest(r *ResponsesRequest) {
	d.object(responsesNames, func(name string) {
		switch name {
		case "model":
			d.str(&r.Model)
		case "input":
			// ResponseInput.UnmarshalJSON: null too resets it.
			r.Input = ResponseInput{}
			switch d.stringOrArray() {
			case '"':
				d.str(&r.Input.Text)
			case '[':
				array(d, &r.Input.Items, d.inputItem)
			}
		case "instructions":
			d.strPtr(&r.Instructions)
		case "previous_response_id":
			d.str(&r.PreviousResponseID)
		case "conversation":
			d.conversation(&r.Conversation)
		case "store":
			d.boolPtr(&r.Store)
		case "stream":
			d.bool(&r.Stream)
		case "stream_options":
			o := new(ResponsesStreamOptions)
			r.StreamOptions = nil
			if d.object(obfuscationNames, func(string) { d.boolPtr(&o.IncludeObfuscation) }) {
				r.StreamOptions = o
			}
		case "background":
			d.bool(&r.Background)
		case "tools":
			array(d, &r.Tools, d.responseTool)
		case "tool_choice":
			d.responseToolChoice(&r.ToolChoice)
		case "parallel_tool_calls":
			d.boolPtr(&r.ParallelToolCalls)
		case "max_tool_calls":
			d.intPtr(&r.MaxToolCalls)
		case "text":
			d.textConfig(&r.Text)
		case "reasoning":
			d.reasoning(&r.Reasoning)
		case "temperature":
			d.floatPtr(&r.Temperature)
		case "top_p":
			d.floatPtr(&r.TopP)
		case "presence_penalty":
			d.floatPtr(&r.PresencePenalty)
		case "frequency_penalty":
			d.floatPtr(&r.FrequencyPenalty)
		case "max_output_tokens":
			d.intPtr(&r.MaxOutputTokens)
		case "top_logprobs":
			d.intPtr(&r.TopLogprobs)
		case "service_tier":
			d.str(&r.ServiceTier)
		case "truncation":
			d.str(&r.Truncation)
		case "include":
			array(d, &r.Include, d.str)
		case "metadata":
			d.stringMap(&r.Metadata)
		case "user":
			d.str(&r.User)
		case "safety_identifier":
			d.str(&r.SafetyIdentifier)
		case "prompt_cache_key":
			d.str(&r.PromptCacheKey)
		}
	})
}

// conversation decodes as ConversationRef.UnmarshalJSON does.
func (d *wireDecoder) conversation(p **ConversationRef) {
	*p = nil
	switch d.Peek() {
	case '"':
		c := new(ConversationRef)
		d.str(&c.ID)
		*p = c
	case '{':
		c := new(ConversationRef)
		d.object(idNames, func(string) { d.str(&c.ID) })
		*p = c
	case 'n':
		d.Literal("null")
	default:
		d.Fail()
	}
}

func (d *wireDecoder) inputItem(it *InputItem) {
	d.object(inputItemNames, func(name string) {
		switch name {
		case "type":
			d.known(&it.Type, ItemMessage, ItemFunctionCall, ItemFunctionCallOutput)
		case "id":
			d.str(&it.ID)
		case "role":
			d.known(&it.Role, RoleUser, RoleAssistant, RoleSystem, RoleDeveloper)
		case "content":
			d.inputContent(&it.Content)
		case "call_id":
			d.str(&it.CallID)
		case "name":
			d.str(&it.Name)
		case "arguments":
			d.str(&it.Arguments)
		case "output":
			d.inputContent(&it.Output)
		}
	})
}

// inputContent decodes as InputContent.UnmarshalJSON does.
func (d *wireDecoder) inputContent(p **InputContent) {
	switch d.stringOrArray() {
	case '"':
		c := new(InputContent)
		d.str(&c.Text)
		*p = c
	case '[':
		c := new(InputContent)
		array(d, &c.Parts, d.inputPart)
		*p = c
	default:
		*p = nil
	}
}

func (d *wireDecoder) inputPart(p *InputPart) {
	d.object(inputPartNames, func(name string) {
		switch name {
		case "type":
			d.known(&p.Type, PartInputText, PartOutputText, PartInputImage)
		case "text":
			d.str(&p.Text)
		case "image_url":
			d.str(&p.ImageURL)
		case "detail":
			d.str(&p.Detail)
		case "file_data":
			d.str(&p.FileData)
		case "file_id":
			d.str(&p.FileID)
		case "file_url":
			d.str(&p.FileURL)
		case "filename":
			d.str(&p.Filename)
		case "refusal":
			d.str(&p.Refusal)
		}
	})
}

func (d *wireDecoder) responseTool(t *ResponseTool) {
	d.object(responseToolNames, func(name string) {
		switch name {
		case "type":
			d.known(&t.Type, ToolChoiceFunction)
		case "name":
			d.str(&t.Name)
		case "description":
			d.strPtr(&t.Description)
		case "parameters":
			d.anyMap(&t.Parameters)
		case "strict":
			d.boolPtr(&t.Strict)
		}
	})
}

// responseToolChoice decodes as ResponseToolChoice.UnmarshalJSON does:
// Allowed lists the names of the tools, nil for none.
func (d *wireDecoder) responseToolChoice(p **ResponseToolChoice) {
	*p = nil
	switch d.Peek() {
	case '"':
		t := new(ResponseToolChoice)
		d.str(&t.Mode)
		*p = t
	case '{':
		t := new(ResponseToolChoice)
		d.object(responseToolChoiceNames, func(name string) {
			switch name {
			case "type":
				d.str(&t.Mode)
			case "name":
				d.str(&t.Name)
			case "mode":
				d.str(&t.AllowedMode)
			case "tools":
				var tools []ResponseTool // its type and name
				array(d, &tools, func(tool *ResponseTool) {
					d.object(allowedToolNames, func(name string) {
						if name == "type" {
							d.str(&tool.Type)
						} else {
							d.str(&tool.Name)
						}
					})
				})
				for _, tool := range tools {
					t.Allowed = append(t.Allowed, tool.Name)
				}
			}
		})
		*p = t
	case 'n':
		d.Literal("null")
	default:
		d.Fail()
	}
}

func (d *wireDecoder) textConfig(p **TextConfig) {
	c := new(TextConfig)
	*p = nil
	if d.object(textConfigNames, func(name string) {
		if name == "verbosity" {
			d.str(&c.Verbosity)
			return
		}
		f := new(TextFormat)
		if d.object(textFormatNames, func(name string) {
			switch name {
			case "type":
				d.str(&f.Type)
			case "name":
				d.str(&f.Name)
			case "description":
				d.str(&f.Description)
			case "schema":
				d.anyMap(&f.Schema)
			case "strict":
				d.boolPtr(&f.Strict)
			}
		}) {
			c.Format = f
		}
	}) {
		*p = c
	}
}
