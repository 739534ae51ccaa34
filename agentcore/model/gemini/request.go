package gemini

import (
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/agentgate/agentgate/agentcore/model"
)

// The request side of generateContent and streamGenerateContent, encoded
// by this package. genai.Content, genai.Tool and the other genai types
// they hold encode to exactly the Gemini REST wire (genai's own client
// encodes them the same way, then takes the JSON apart into maps and
// encodes it again); what genai.GenerateContentConfig mixes (the request's
// top level and its generationConfig) is sorted out here, as genai's
// generateContentParametersToMldev does. genai's client stays in the tests
// as the oracle these types are compared against.

// wireRequest is a generateContent body.
type wireRequest struct {
	Contents          []*genai.Content       `json:"contents,omitempty"`
	SystemInstruction *genai.Content         `json:"systemInstruction,omitempty"`
	Tools             []*genai.Tool          `json:"tools,omitempty"`
	ToolConfig        *genai.ToolConfig      `json:"toolConfig,omitempty"`
	SafetySettings    []*genai.SafetySetting `json:"safetySettings,omitempty"`
	CachedContent     string                 `json:"cachedContent,omitempty"`
	Labels            map[string]string      `json:"labels,omitempty"`
	ServiceTier       genai.ServiceTier      `json:"serviceTier,omitempty"`
	ContinuationToken []byte                 `json:"continuationToken,omitempty"`
	Store             *bool                  `json:"store,omitempty"`
	GenerationConfig  *wireGenerationConfig  `json:"generationConfig,omitempty"`
}

// wireGenerationConfig is a request's generationConfig: the generation
// settings of genai.GenerateContentConfig, under the same names.
type wireGenerationConfig struct {
	Temperature                *float32                        `json:"temperature,omitempty"`
	TopP                       *float32                        `json:"topP,omitempty"`
	TopK                       *float32                        `json:"topK,omitempty"`
	CandidateCount             int32                           `json:"candidateCount,omitempty"`
	MaxOutputTokens            int32                           `json:"maxOutputTokens,omitempty"`
	StopSequences              []string                        `json:"stopSequences,omitempty"`
	ResponseLogprobs           bool                            `json:"responseLogprobs,omitempty"`
	Logprobs                   *int32                          `json:"logprobs,omitempty"`
	PresencePenalty            *float32                        `json:"presencePenalty,omitempty"`
	FrequencyPenalty           *float32                        `json:"frequencyPenalty,omitempty"`
	Seed                       *int32                          `json:"seed,omitempty"`
	ResponseMIMEType           string                          `json:"responseMimeType,omitempty"`
	ResponseSchema             *genai.Schema                   `json:"responseSchema,omitempty"`
	ResponseJsonSchema         any                             `json:"responseJsonSchema,omitempty"`
	ResponseModalities         []string                        `json:"responseModalities,omitempty"`
	MediaResolution            genai.MediaResolution           `json:"mediaResolution,omitempty"`
	SpeechConfig               *genai.SpeechConfig             `json:"speechConfig,omitempty"`
	ThinkingConfig             *genai.ThinkingConfig           `json:"thinkingConfig,omitempty"`
	ImageConfig                *genai.ImageConfig              `json:"imageConfig,omitempty"`
	EnableEnhancedCivicAnswers *bool                           `json:"enableEnhancedCivicAnswers,omitempty"`
	AudioTranscriptionConfig   *genai.AudioTranscriptionConfig `json:"audioTranscriptionConfig,omitempty"`
}

// encodeRequest returns the JSON body for req. Neither req nor what it
// points to is modified. Settings only Vertex AI has are refused, as genai
// refuses them for the Gemini API.
func encodeRequest(req *model.Request) ([]byte, error) {
	w, err := buildRequest(req)
	if err != nil {
		return nil, err
	}
	return w.encode()
}

// buildRequest returns the body for req (see encodeRequest).
func buildRequest(req *model.Request) (*wireRequest, error) {
	if err := vertexOnly(req); err != nil {
		return nil, err
	}
	w := &wireRequest{Contents: outgoing(req.Contents), GenerationConfig: &wireGenerationConfig{}}
	if cfg := req.Config; cfg != nil {
		if si := cfg.SystemInstruction; si != nil && si.Role == "" {
			// genai's default: a system instruction without a role is the
			// user's.
			cp := *si
			cp.Role = genai.RoleUser
			w.SystemInstruction = &cp
		} else {
			w.SystemInstruction = si
		}
		w.Tools, w.ToolConfig, w.SafetySettings, w.Labels = cfg.Tools, cfg.ToolConfig, cfg.SafetySettings, cfg.Labels
		w.CachedContent = cachedContentName(cfg.CachedContent)
		w.ServiceTier, w.ContinuationToken, w.Store = cfg.ServiceTier, cfg.ContinuationToken, cfg.Store
		w.GenerationConfig = &wireGenerationConfig{
			Temperature: cfg.Temperature, TopP: cfg.TopP, TopK: cfg.TopK,
			CandidateCount: cfg.CandidateCount, MaxOutputTokens: cfg.MaxOutputTokens, StopSequences: cfg.StopSequences,
			ResponseLogprobs: cfg.ResponseLogprobs, Logprobs: cfg.Logprobs,
			PresencePenalty: cfg.PresencePenalty, FrequencyPenalty: cfg.FrequencyPenalty, Seed: cfg.Seed,
			ResponseMIMEType: cfg.ResponseMIMEType, ResponseSchema: cfg.ResponseSchema, ResponseJsonSchema: cfg.ResponseJsonSchema,
			ResponseModalities: cfg.ResponseModalities, MediaResolution: cfg.MediaResolution,
			SpeechConfig: cfg.SpeechConfig, ThinkingConfig: cfg.ThinkingConfig, ImageConfig: cfg.ImageConfig,
			EnableEnhancedCivicAnswers: cfg.EnableEnhancedCivicAnswers, AudioTranscriptionConfig: cfg.AudioTranscriptionConfig,
		}
	}
	return w, nil
}

// cachedContentName is a cached content's resource name: a bare id gets
// the "cachedContents/" collection in front, as genai puts it.
func cachedContentName(name string) string {
	if name == "" || strings.Contains(name, "/") {
		return name
	}
	return "cachedContents/" + name
}

// vertexOnly returns an error naming the first setting in req that only
// Vertex AI accepts (genai refuses the same ones before sending).
func vertexOnly(req *model.Request) error {
	var name string
	for _, c := range req.Contents {
		if c == nil {
			continue
		}
		for _, p := range c.Parts {
			if p != nil && p.FunctionCall != nil {
				switch {
				case len(p.FunctionCall.PartialArgs) > 0:
					name = "functionCall.partialArgs"
				case p.FunctionCall.WillContinue != nil:
					name = "functionCall.willContinue"
				}
				if name != "" {
					return unsupported(name)
				}
			}
		}
	}
	cfg := req.Config
	if cfg == nil {
		return nil
	}
	switch {
	case cfg.RoutingConfig != nil:
		name = "routingConfig"
	case cfg.ModelSelectionConfig != nil:
		name = "modelSelectionConfig"
	case cfg.AudioTimestamp:
		name = "audioTimestamp"
	case cfg.ModelArmorConfig != nil:
		name = "modelArmorConfig"
	case cfg.GenerationOutputConfig != nil:
		name = "generationOutputConfig"
	case cfg.ToolConfig != nil && cfg.ToolConfig.FunctionCallingConfig != nil && cfg.ToolConfig.FunctionCallingConfig.StreamFunctionCallArguments != nil:
		name = "toolConfig.functionCallingConfig.streamFunctionCallArguments"
	case cfg.ImageConfig != nil:
		name = vertexImageConfig(cfg.ImageConfig)
	}
	for _, s := range cfg.SafetySettings {
		if name == "" && s != nil && s.Method != "" {
			name = "safetySettings.method"
		}
	}
	for _, t := range cfg.Tools {
		if name == "" && t != nil {
			name = vertexTool(t)
		}
	}
	if name != "" {
		return unsupported(name)
	}
	return nil
}

func vertexImageConfig(c *genai.ImageConfig) string {
	switch {
	case c.PersonGeneration != "":
		return "imageConfig.personGeneration"
	case c.ProminentPeople != "":
		return "imageConfig.prominentPeople"
	case c.OutputMIMEType != "":
		return "imageConfig.outputMimeType"
	case c.OutputCompressionQuality != nil:
		return "imageConfig.outputCompressionQuality"
	case c.ImageOutputOptions != nil:
		return "imageConfig.imageOutputOptions"
	}
	return ""
}

func vertexTool(t *genai.Tool) string {
	switch {
	case t.Retrieval != nil:
		return "tools.retrieval"
	case t.EnterpriseWebSearch != nil:
		return "tools.enterpriseWebSearch"
	case t.ParallelAISearch != nil:
		return "tools.parallelAiSearch"
	case t.ExaAISearch != nil:
		return "tools.exaAiSearch"
	case t.GoogleSearch != nil && t.GoogleSearch.BlockingConfidence != "":
		return "tools.googleSearch.blockingConfidence"
	case t.GoogleSearch != nil && len(t.GoogleSearch.ExcludeDomains) > 0:
		return "tools.googleSearch.excludeDomains"
	case t.GoogleMaps != nil && t.GoogleMaps.GroundingTypes != nil:
		return "tools.googleMaps.groundingTypes"
	case t.GoogleMaps != nil && t.GoogleMaps.AuthConfig != nil:
		a := t.GoogleMaps.AuthConfig
		if a.APIKeyConfig != nil || a.AuthType != "" || a.GoogleServiceAccountConfig != nil || a.HTTPBasicAuthConfig != nil ||
			a.OauthConfig != nil || a.OidcConfig != nil {
			return "tools.googleMaps.authConfig (other than apiKey)"
		}
	}
	return ""
}

// unsupported is the error for a setting the Gemini API does not take.
func unsupported(name string) error {
	return fmt.Errorf("%s is only supported by Vertex AI, not by the Gemini API", name)
}
