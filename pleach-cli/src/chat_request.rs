//! What `pleach chat` asks of the model and how long it waits: the system prompt, the token
//! limit, the temperature, the tool choice, strict mode, the tools offered, and the turn's and
//! each model step's timeouts. One group of flags, read into [`AgentOptions`].

use std::time::Duration;

use pleach_core::agent::{AgentOptions, ToolChoice};

use crate::duration;
use crate::usage::UsageError;

/// The model request's flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RequestArgs {
    /// The system prompt: the text, or `@FILE` for a file's contents.
    #[arg(long, value_name = "TEXT|@FILE")]
    system: Option<String>,
    /// The most tokens one response may have (sent as the API names it: `max_tokens`, or
    /// `max_completion_tokens` for OpenAI's own API and Azure OpenAI).
    #[arg(long, value_name = "N")]
    max_tokens: Option<u32>,
    /// The sampling temperature.
    #[arg(long, value_name = "T")]
    temperature: Option<f64>,
    /// Whether and which tool the model must call: `auto`, `required`, `none`, or a tool's name.
    #[arg(long, value_name = "auto|required|none|NAME")]
    tool_choice: Option<String>,
    /// Offers the model only these tools (comma-separated or repeated): a small local model's
    /// context cannot hold the whole catalog.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    tools: Option<Vec<String>>,
    /// Does not offer the model these tools (comma-separated or repeated).
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    exclude_tools: Vec<String>,
    /// Sends the tools in the provider's strict mode, whatever the endpoint (by default only
    /// OpenAI's own API, Azure OpenAI and Anthropic's own API get it).
    #[arg(long, conflicts_with = "no_strict")]
    strict: bool,
    /// Sends the tools without the provider's strict mode, whatever the endpoint.
    #[arg(long)]
    no_strict: bool,
    /// How long one user turn may take, every model step and call in it (`5m`, `90s`).
    #[arg(long, value_name = "DURATION", value_parser = duration::positive)]
    turn_timeout: Option<Duration>,
    /// How long one model step (a request and its whole streamed response) may take.
    #[arg(long, value_name = "DURATION", value_parser = duration::positive)]
    step_timeout: Option<Duration>,
}

impl RequestArgs {
    /// The first flag given that a durable conversation does not take (all but `--strict` and
    /// `--no-strict`, which go with its endpoint).
    #[cfg(feature = "temporal")]
    pub(crate) fn per_run_flag(&self) -> Option<&'static str> {
        [
            (self.system.is_some(), "--system"),
            (self.max_tokens.is_some(), "--max-tokens"),
            (self.temperature.is_some(), "--temperature"),
            (self.tool_choice.is_some(), "--tool-choice"),
            (self.tools.is_some(), "--tools"),
            (!self.exclude_tools.is_empty(), "--exclude-tools"),
            (self.turn_timeout.is_some(), "--turn-timeout"),
            (self.step_timeout.is_some(), "--step-timeout"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// `--strict` or `--no-strict`, if either was given.
    pub(crate) fn strict(&self) -> Option<bool> {
        match (self.strict, self.no_strict) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        }
    }

    /// The agent options the flags ask for, with `max_steps`; `known` are the session's tools,
    /// which the tool names given must be among.
    pub(crate) fn agent_options(
        &self,
        max_steps: usize,
        known: &[&str],
    ) -> Result<AgentOptions, UsageError> {
        let mut options = AgentOptions::default().max_steps(max_steps);
        if let Some(system) = &self.system {
            options = options.system(system_prompt(system)?);
        }
        if let Some(tokens) = self.max_tokens {
            if tokens == 0 {
                return Err(UsageError("--max-tokens must be at least 1".into()));
            }
            options = options.max_tokens(tokens);
        }
        if let Some(temperature) = self.temperature {
            if !temperature.is_finite() || temperature < 0.0 {
                return Err(UsageError(format!(
                    "--temperature must be a number of 0 or more, not {temperature}"
                )));
            }
            options = options.temperature(temperature);
        }
        if let Some(tools) = &self.tools {
            check_names("--tools", tools, known)?;
            options = options.tools(tools.iter().map(|name| name.trim()));
        }
        if !self.exclude_tools.is_empty() {
            check_names("--exclude-tools", &self.exclude_tools, known)?;
            options = options.exclude_tools(self.exclude_tools.iter().map(|name| name.trim()));
        }
        if let Some(choice) = &self.tool_choice {
            let choice = choice
                .trim()
                .parse::<ToolChoice>()
                .unwrap_or(ToolChoice::Auto);
            if let ToolChoice::Tool(name) = &choice {
                let offered: Vec<&str> = known
                    .iter()
                    .copied()
                    .filter(|tool| options.offers(tool))
                    .collect();
                check_names("--tool-choice", std::slice::from_ref(name), &offered)?;
            }
            options = options.tool_choice(choice);
        }
        if let Some(strict) = self.strict() {
            options = options.strict(strict);
        }
        if let Some(timeout) = self.turn_timeout {
            options = options.timeout(timeout);
        }
        if let Some(timeout) = self.step_timeout {
            options = options.step_timeout(timeout);
        }
        Ok(options)
    }
}

/// `--system`'s text: as given, or a file's contents for `@FILE`.
fn system_prompt(given: &str) -> Result<String, UsageError> {
    let Some(path) = given.strip_prefix('@') else {
        return Ok(given.to_owned());
    };
    std::fs::read_to_string(path)
        .map_err(|error| UsageError(format!("--system: cannot read `{path}`: {error}")))
}

/// Every name in `names` is one of `known`; else one error naming each unknown one, with the
/// closest known name where there is one.
fn check_names(flag: &str, names: &[String], known: &[&str]) -> Result<(), UsageError> {
    let unknown: Vec<String> = names
        .iter()
        .map(|name| name.trim())
        .filter(|name| !known.contains(name))
        .map(
            |name| match pleach_suggest::closest(name, known.iter().copied()) {
                Some(close) => format!("`{name}` (did you mean `{close}`?)"),
                None => format!("`{name}`"),
            },
        )
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(UsageError(format!(
        "{flag}: no such tool: {}; the tools are {}",
        unknown.join(", "),
        known.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags as `pleach chat` reads them.
    fn try_args(flags: &[&str]) -> Result<RequestArgs, clap::Error> {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            request: RequestArgs,
        }
        let mut argv = vec!["pleach"];
        argv.extend_from_slice(flags);
        Cli::try_parse_from(argv).map(|cli| cli.request)
    }

    fn args(flags: &[&str]) -> RequestArgs {
        try_args(flags).unwrap()
    }

    const KNOWN: [&str; 3] = ["datetime", "math", "unit_convert"];

    #[test]
    fn the_flags_become_the_agent_options() {
        let options = args(&[
            "--system",
            "Be brief.",
            "--max-tokens",
            "200",
            "--temperature",
            "0.2",
            "--tools",
            "math,datetime",
            "--tool-choice",
            "math",
            "--no-strict",
            "--turn-timeout",
            "5m",
            "--step-timeout",
            "90s",
        ])
        .agent_options(4, &KNOWN)
        .unwrap();
        assert_eq!(options.max_steps, 4);
        assert_eq!(options.system.as_deref(), Some("Be brief."));
        assert_eq!(options.max_tokens, Some(200));
        assert_eq!(options.temperature, Some(0.2));
        assert_eq!(
            options.tools,
            Some(vec!["math".to_owned(), "datetime".to_owned()])
        );
        assert_eq!(options.tool_choice, Some(ToolChoice::Tool("math".into())));
        assert_eq!(options.strict, Some(false));
        assert_eq!(options.timeout, Some(Duration::from_mins(5)));
        assert_eq!(options.step_timeout, Some(Duration::from_secs(90)));

        let bare = args(&[]).agent_options(16, &KNOWN).unwrap();
        assert_eq!(bare, AgentOptions::default());
    }

    #[test]
    fn unknown_tool_names_are_one_error_with_did_you_mean() {
        let error = args(&["--tools", "maths,datetime,weather"])
            .agent_options(16, &KNOWN)
            .unwrap_err();
        assert_eq!(
            error.0,
            "--tools: no such tool: `maths` (did you mean `math`?), `weather`; the tools are datetime, math, unit_convert"
        );
        let error = args(&["--exclude-tools", "datetme"])
            .agent_options(16, &KNOWN)
            .unwrap_err();
        assert!(error.0.contains("did you mean `datetime`?"), "{}", error.0);
        // A tool choice must be a tool the model is offered.
        let error = args(&["--tools", "math", "--tool-choice", "datetime"])
            .agent_options(16, &KNOWN)
            .unwrap_err();
        assert!(
            error
                .0
                .starts_with("--tool-choice: no such tool: `datetime`"),
            "{}",
            error.0
        );
        let choice = args(&["--tool-choice", "required"])
            .agent_options(16, &KNOWN)
            .unwrap();
        assert_eq!(choice.tool_choice, Some(ToolChoice::Required));
    }

    #[test]
    fn the_system_prompt_can_come_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("system.txt");
        std::fs::write(&path, "From a file.").unwrap();
        let flag = format!("@{}", path.display());
        let options = args(&["--system", &flag])
            .agent_options(16, &KNOWN)
            .unwrap();
        assert_eq!(options.system.as_deref(), Some("From a file."));
        let missing = format!("@{}", dir.path().join("none.txt").display());
        let error = args(&["--system", &missing])
            .agent_options(16, &KNOWN)
            .unwrap_err();
        assert!(error.0.starts_with("--system: cannot read"), "{}", error.0);
    }

    #[test]
    fn strict_and_no_strict_force_either_and_cannot_go_together() {
        assert_eq!(args(&[]).strict(), None);
        assert_eq!(args(&["--strict"]).strict(), Some(true));
        assert_eq!(args(&["--no-strict"]).strict(), Some(false));
        assert!(try_args(&["--strict", "--no-strict"]).is_err());
    }
}
