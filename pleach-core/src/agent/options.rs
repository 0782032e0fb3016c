//! How an agent run goes and how it ended: [`AgentOptions`] and its defaults, [`StopReason`],
//! each step's [`StepReport`] and the run's [`AgentOutcome`].

use std::time::Duration;

use super::client::{ModelError, ModelRequest, ToolChoice};
use crate::defaults;
use crate::search::ToolSearch;
use crate::session::ToolResult;

/// How an agent run goes. Read the settings as fields; set them with the setter of the same
/// name.
///
/// Besides the loop's own limits, it holds what each request asks of the model (a system prompt,
/// the token limit, the temperature, the tool choice, strict mode) and which tools the model is
/// offered. The HTTP clients hold an endpoint's defaults (Anthropic's `max_tokens`, strict mode
/// by host); a setting made here overrides them for the run. A request setting left unset is not
/// sent, and the API's own default applies.
///
/// ```
/// use std::time::Duration;
/// use pleach_core::agent::{AgentOptions, ToolChoice};
/// let options = AgentOptions::default()
///     .max_steps(3)
///     .system("Answer in one sentence.")
///     .max_tokens(200)
///     .tools(["math"])
///     .tool_choice(ToolChoice::Required)
///     .step_timeout(Duration::from_secs(60));
/// assert_eq!(options.max_steps, 3);
/// assert_eq!(options.system.as_deref(), Some("Answer in one sentence."));
/// assert_eq!(AgentOptions::default().max_steps, pleach_core::defaults::MAX_STEPS);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOptions {
    /// How many requests to the model at most (each step is one request and the calls it
    /// makes; default [`defaults::MAX_STEPS`], 16). Reached with calls still being made, the run
    /// stops with [`StopReason::MaxSteps`].
    pub max_steps: usize,
    /// How many bytes one response may have (default [`defaults::MAX_RESPONSE_BYTES`], 32 MiB);
    /// past it the response is cut off there (its open calls fail as incomplete) and the run
    /// stops with [`ModelError::TooLarge`].
    pub max_response_bytes: usize,
    /// The system prompt, sent before the conversation (OpenAI: a `system` message first;
    /// Anthropic: the request's `system`). Default: none.
    pub system: Option<String>,
    /// The most tokens one response may have, sent as the API names it (`max_tokens`, or
    /// `max_completion_tokens` for OpenAI's own API and Azure OpenAI). Default: the API's
    /// (Anthropic's client sends its own, [`defaults::MAX_TOKENS`](crate::defaults)).
    pub max_tokens: Option<u32>,
    /// The sampling temperature. Default: the API's.
    pub temperature: Option<f64>,
    /// Whether and which tool the model must call. Default: not sent (the API's default, which
    /// is [`ToolChoice::Auto`] when tools are offered). A forced call ([`ToolChoice::Required`],
    /// [`ToolChoice::Tool`]) holds for the run's first step only, so that the model can answer
    /// once it has the result; [`ToolChoice::None`] and [`ToolChoice::Auto`] hold for every step.
    pub tool_choice: Option<ToolChoice>,
    /// Tools in the provider's strict mode (`true`) or plain (`false`) for every request of the
    /// run. Default: the client's setting, which goes by the endpoint (`docs/agent.md`, "Strict
    /// mode").
    pub strict: Option<bool>,
    /// Only these of the session's enabled tools are offered to the model. Default: all.
    pub tools: Option<Vec<String>>,
    /// These tools are not offered to the model. Default: none.
    pub exclude_tools: Vec<String>,
    /// How long the whole run may take. Past it, the response being read is cut off (its open
    /// calls fail 1007) or the running calls are cancelled (1011), and the run stops with
    /// [`StopReason::TimedOut`]. Default: no limit.
    pub timeout: Option<Duration>,
    /// How long one model step (the request and its whole streamed response) may take. Past it
    /// the response is cut off there (its open calls fail 1007) and the run stops with
    /// [`ModelError::Timeout`]. Default: no limit (the HTTP clients' read timeout still applies
    /// between two chunks).
    pub step_timeout: Option<Duration>,
    /// Deferred tools and the search tool that loads them (docs/tool-search.md): the tools it
    /// defers are sent only from the step after a search found them. Default: none, every
    /// offered tool is sent on every step. Read by [`Session::run_agent`](crate::Session::run_agent);
    /// a durable conversation sends every offered tool.
    pub tool_search: Option<ToolSearch>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_steps: defaults::MAX_STEPS,
            max_response_bytes: defaults::MAX_RESPONSE_BYTES,
            system: None,
            max_tokens: None,
            temperature: None,
            tool_choice: None,
            strict: None,
            tools: None,
            exclude_tools: Vec::new(),
            timeout: None,
            step_timeout: None,
            tool_search: None,
        }
    }
}

impl AgentOptions {
    /// Sets how many requests to the model a run makes at most (default
    /// [`defaults::MAX_STEPS`], 16).
    ///
    /// ```
    /// assert_eq!(pleach_core::agent::AgentOptions::default().max_steps(1).max_steps, 1);
    /// ```
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// Sets how many bytes one response may have (default [`defaults::MAX_RESPONSE_BYTES`],
    /// 32 MiB).
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().max_response_bytes(1024);
    /// assert_eq!(options.max_response_bytes, 1024);
    /// ```
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sets the system prompt.
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().system("Be brief.");
    /// assert_eq!(options.system.as_deref(), Some("Be brief."));
    /// ```
    #[doc(alias = "system_prompt")]
    #[must_use]
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Sets the most tokens one response may have.
    ///
    /// ```
    /// assert_eq!(pleach_core::agent::AgentOptions::default().max_tokens(200).max_tokens, Some(200));
    /// ```
    #[doc(alias = "max_completion_tokens")]
    #[doc(alias = "max_output_tokens")]
    #[must_use]
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Sets the sampling temperature.
    ///
    /// ```
    /// assert_eq!(pleach_core::agent::AgentOptions::default().temperature(0.0).temperature, Some(0.0));
    /// ```
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets whether and which tool the model must call.
    ///
    /// ```
    /// use pleach_core::agent::{AgentOptions, ToolChoice};
    /// let options = AgentOptions::default().tool_choice(ToolChoice::Tool("math".into()));
    /// assert_eq!(options.tool_choice, Some(ToolChoice::Tool("math".into())));
    /// ```
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sends the tools in the provider's strict mode (`true`) or plain (`false`) for the run,
    /// whatever the client's setting.
    ///
    /// ```
    /// assert_eq!(pleach_core::agent::AgentOptions::default().strict(false).strict, Some(false));
    /// ```
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }

    /// Offers the model only these of the session's enabled tools (a small local model's
    /// context cannot hold a whole catalog).
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().tools(["math", "datetime"]);
    /// assert_eq!(options.tools, Some(vec!["math".to_owned(), "datetime".to_owned()]));
    /// ```
    #[must_use]
    pub fn tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Does not offer the model these tools.
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().exclude_tools(["shell"]);
    /// assert_eq!(options.exclude_tools, ["shell"]);
    /// ```
    #[must_use]
    pub fn exclude_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.exclude_tools = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets how long the whole run may take.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = pleach_core::agent::AgentOptions::default().timeout(Duration::from_secs(300));
    /// assert_eq!(options.timeout, Some(Duration::from_secs(300)));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets how long one model step (a request and its streamed response) may take.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = pleach_core::agent::AgentOptions::default().step_timeout(Duration::from_secs(60));
    /// assert_eq!(options.step_timeout, Some(Duration::from_secs(60)));
    /// ```
    #[must_use]
    pub fn step_timeout(mut self, timeout: Duration) -> Self {
        self.step_timeout = Some(timeout);
        self
    }

    /// Defers the tools `search` names: they are sent to the model only from the step after its
    /// search tool found them, and a call to one not loaded yet fails with 1021. Register
    /// `search.definition()` in the runtime and enable it in the session.
    ///
    /// ```
    /// use pleach_core::agent::AgentOptions;
    /// use pleach_core::search::ToolSearch;
    /// let options = AgentOptions::default().tool_search(ToolSearch::new([]).name("find_tools"));
    /// assert_eq!(options.tool_search.unwrap().tool_name(), "find_tools");
    /// ```
    #[must_use]
    pub fn tool_search(mut self, search: ToolSearch) -> Self {
        self.tool_search = Some(search);
        self
    }

    /// Whether the model is offered the tool `name`, if the session has it enabled: it is among
    /// [`tools`](AgentOptions::tools) (when set) and not among
    /// [`exclude_tools`](AgentOptions::exclude_tools).
    ///
    /// ```
    /// let options = pleach_core::agent::AgentOptions::default().exclude_tools(["shell_exec"]);
    /// assert!(options.offers("math"));
    /// assert!(!options.offers("shell_exec"));
    /// assert!(!options.tools(["datetime"]).offers("math"));
    /// ```
    pub fn offers(&self, name: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|tools| tools.iter().any(|tool| tool == name))
            && !self.exclude_tools.iter().any(|tool| tool == name)
    }
}

impl<'a> ModelRequest<'a> {
    /// Takes the request settings of `options`: system prompt, token limit, temperature, tool
    /// choice and strict mode.
    ///
    /// ```
    /// use pleach_core::agent::{AgentOptions, ModelRequest};
    /// let options = AgentOptions::default().system("Be brief.").max_tokens(64);
    /// let request = ModelRequest::new(&[], &[]).options(&options);
    /// assert_eq!(request.system, Some("Be brief."));
    /// assert_eq!(request.max_tokens, Some(64));
    /// ```
    #[must_use]
    pub fn options(mut self, options: &'a AgentOptions) -> Self {
        self.system = options.system.as_deref();
        self.max_tokens = options.max_tokens;
        self.temperature = options.temperature;
        self.tool_choice = options.tool_choice.as_ref();
        self.strict = options.strict;
        self
    }
}

/// Why a run stopped.
///
/// ```
/// use pleach_core::agent::StopReason;
/// assert!(StopReason::Finished.is_finished());
/// assert!(!StopReason::MaxSteps.is_finished());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without calling a tool: [`AgentOutcome::final_text`] is its answer.
    Finished,
    /// [`AgentOptions::max_steps`] requests were made and the model was still calling tools;
    /// the last calls ran and their results are in the conversation.
    MaxSteps,
    /// The model's answer (text, no call) was cut off by its token limit (OpenAI's
    /// `finish_reason: "length"`, Anthropic's `stop_reason: "max_tokens"`, Gemini's
    /// `MAX_TOKENS`): [`AgentOutcome::final_text`] is what it wrote, and it is in the
    /// conversation, but it is not a whole answer. Raise
    /// [`AgentOptions::max_tokens`] (or the server's context) and ask again.
    #[doc(alias = "length")]
    MaxTokens,
    /// The run was cancelled ([`AgentRun::cancel`](crate::agent::AgentRun::cancel), or the
    /// session dropped).
    Cancelled,
    /// The run went past [`AgentOptions::timeout`]: the response being read was cut off there
    /// (its open calls failed 1007), or the running calls were cancelled (1011).
    TimedOut(Duration),
    /// The model could not be asked, or its response broke off. Calls that were complete
    /// before the break ran; the others failed.
    Error(ModelError),
}

impl StopReason {
    /// Whether the model finished with an answer.
    ///
    /// ```
    /// assert!(pleach_core::agent::StopReason::Finished.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        matches!(self, StopReason::Finished)
    }
}

/// The finish reasons that say a response was cut off by its token limit, as each API spells
/// them: Chat Completions, Anthropic, Gemini, the Responses API's incomplete reason.
const TOKEN_LIMIT_REASONS: [&str; 4] = ["length", "max_tokens", "MAX_TOKENS", "max_output_tokens"];

/// What happened in one step: the model's text, its calls' results, and what the stream held
/// that was not a call.
///
/// ```
/// let step = pleach_core::agent::StepReport::default();
/// assert!(step.results.is_empty() && step.skipped_events == 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StepReport {
    /// The model's text in this step, if any.
    pub text: Option<String>,
    /// One result per call, in call order (failed calls included).
    pub results: Vec<ToolResult>,
    /// The provider's finish or stop reason, as it spells it.
    pub finish_reason: Option<String>,
    /// Events of a type the stream parser does not know: skipped, and counted here.
    pub skipped_events: usize,
    /// Problems not tied to one call: unreadable events, errors the provider reported.
    pub stream_errors: Vec<String>,
    /// Stream input that named no call that could be run or failed on its own (a call id seen
    /// twice, fragments for a call never started): no events, no result message, said here.
    pub refused: Vec<String>,
    /// Prompt tokens, as reported.
    pub input_tokens: Option<u64>,
    /// Completion tokens, as reported.
    pub output_tokens: Option<u64>,
}

impl StepReport {
    /// Whether the response was cut off by its token limit: its finish reason is OpenAI's
    /// `length`, Anthropic's `max_tokens`, Gemini's `MAX_TOKENS` or the Responses API's
    /// `max_output_tokens`.
    ///
    /// ```
    /// let mut step = pleach_core::agent::StepReport::default();
    /// assert!(!step.hit_token_limit());
    /// step.finish_reason = Some("length".into());
    /// assert!(step.hit_token_limit());
    /// ```
    pub fn hit_token_limit(&self) -> bool {
        self.finish_reason
            .as_deref()
            .is_some_and(|reason| TOKEN_LIMIT_REASONS.contains(&reason))
    }
}

/// How a run ended.
///
/// ```
/// use pleach_core::agent::{AgentOutcome, StopReason};
/// let outcome = AgentOutcome::default();
/// assert_eq!(outcome.stop_reason, StopReason::Finished);
/// assert!(outcome.steps.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// Every step, in order (one per request that was answered).
    pub steps: Vec<StepReport>,
    /// The model's answer, when it finished with one.
    pub final_text: Option<String>,
    /// Why the run stopped.
    pub stop_reason: StopReason,
}

impl Default for AgentOutcome {
    fn default() -> Self {
        AgentOutcome {
            steps: Vec::new(),
            final_text: None,
            stop_reason: StopReason::Finished,
        }
    }
}
