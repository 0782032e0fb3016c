//! `--provider`: a model API's wire format, spelled the same by every command that takes one
//! (`schema`, `replay`, `chat`).

use pleach_core::providers::ProviderFormat;
use pleach_core::providers::anthropic::Anthropic;
use pleach_core::providers::gemini::Gemini;
use pleach_core::providers::openai_chat::OpenAiChat;
use pleach_core::providers::openai_responses::OpenAiResponses;

/// A model API's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Provider {
    /// OpenAI Chat Completions (and the APIs that copy it: vLLM, llama.cpp's server, Ollama,
    /// `OpenRouter`, …).
    #[value(alias = "openai")]
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Gemini `generateContent` / `streamGenerateContent`.
    Gemini,
}

impl Provider {
    /// The format's definitions, calls, messages and stream parser.
    pub(crate) fn format(self) -> &'static dyn ProviderFormat {
        match self {
            Provider::OpenaiChat => &OpenAiChat,
            Provider::OpenaiResponses => &OpenAiResponses,
            Provider::Anthropic => &Anthropic,
            Provider::Gemini => &Gemini,
        }
    }
}
