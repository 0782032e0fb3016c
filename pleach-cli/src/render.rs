//! Events for a person (a line per call, a spinner while calls run on a terminal, colour unless
//! `NO_COLOR`) or for a program (NDJSON, `--json`).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use pleach_core::{EventStream, ToolEvent};

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TICK: Duration = Duration::from_millis(80);
/// Results longer than this are cut in the human rendering (`--json` has them whole).
const MAX_SHOWN: usize = 110;

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// NDJSON, one event a line.
    Json,
    /// A line per finished call (stdout is not a terminal).
    Plain,
    /// A line per finished call, a spinner while calls run, colour unless `NO_COLOR`.
    Terminal { colour: bool },
}

/// Prints a stream of events, for a person or as NDJSON.
pub(crate) struct Renderer {
    style: Style,
    running: HashMap<String, (String, Instant)>,
    /// When the last `tool.started` or `tool.delta` came: a model step's calls run only after
    /// its whole response has streamed, so none of them was dispatched before this.
    last_streamed: Option<Instant>,
    frame: usize,
    spinner_shown: bool,
}

impl Renderer {
    pub(crate) fn new(json: bool) -> Renderer {
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let style = if json {
            Style::Json
        } else if std::io::stdout().is_terminal() {
            Style::Terminal { colour: !no_colour }
        } else {
            Style::Plain
        };
        Renderer {
            style,
            running: HashMap::new(),
            last_streamed: None,
            frame: 0,
            spinner_shown: false,
        }
    }

    /// Whether events go out as NDJSON.
    pub(crate) fn is_json(&self) -> bool {
        self.style == Style::Json
    }

    /// A line of the conversation (`user: …`, `model: …`), dimmed label on a terminal; nothing in
    /// `--json` mode, whose output is events only.
    pub(crate) fn say(&mut self, who: &str, text: &str) {
        if self.is_json() {
            return;
        }
        self.clear_spinner();
        let label = self.paint("1", &format!("{who}:"));
        outln!("{label} {text}");
    }

    /// Renders every event of `events` until the stream ends, handing each event that waits
    /// for the host's answer (an approval, a tool's question or sampling request) to `answer`
    /// (`ask::answer`, `form::answer`).
    pub(crate) async fn follow(
        &mut self,
        events: &mut EventStream,
        mut answer: impl FnMut(&ToolEvent),
    ) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => {
                        self.event(&event);
                        if matches!(
                            event,
                            ToolEvent::InterruptRequested { .. }
                                | ToolEvent::ElicitationRequested { .. }
                                | ToolEvent::SamplingRequested { .. }
                        ) {
                            self.clear_spinner();
                            answer(&event);
                        }
                    }
                    None => break,
                },
                _ = tick.tick(), if matches!(self.style, Style::Terminal { .. }) && !self.running.is_empty() => self.spin(),
            }
        }
        self.clear_spinner();
        let _ = std::io::stdout().flush();
    }

    /// Renders one event.
    pub(crate) fn event(&mut self, event: &ToolEvent) {
        if self.is_json() {
            out!("{}", event.to_ndjson());
            return;
        }
        match event {
            ToolEvent::Started { tool_call } => {
                let shown = format!("{} {}", tool_call.name(), shorten(tool_call.arguments()));
                let now = Instant::now();
                self.last_streamed = Some(now);
                self.running.insert(tool_call.id().to_owned(), (shown, now));
            }
            // Argument text (a string); a running tool's progress may be any JSON.
            ToolEvent::Delta { delta, .. } if delta.is_string() => {
                self.last_streamed = Some(Instant::now());
            }
            ToolEvent::Delta { .. } => {}
            ToolEvent::Completed {
                tool_call,
                result,
                content,
            } => {
                let (shown, took) =
                    self.finished(tool_call.id(), tool_call.name(), tool_call.arguments());
                let mark = self.paint("32", "✓");
                self.clear_spinner();
                outln!("  {mark} {shown} → {}{took}", shorten(&result.to_string()));
                // One line a content block: `image/png 1280×720 84 KB`.
                for block in content {
                    outln!("      {}", block.summary());
                }
            }
            ToolEvent::Failed { tool_call, error } => {
                let (shown, took) =
                    self.finished(tool_call.id(), tool_call.name(), tool_call.arguments());
                let mark = self.paint("31", "✗");
                let code = self.paint("31", &format!("error {}", error.code().as_u16()));
                self.clear_spinner();
                outln!(
                    "  {mark} {shown} → {code}: {}{took}",
                    shorten(error.message())
                );
            }
            other => {
                self.clear_spinner();
                outln!("  · {} {}", other.event_type(), other.tool_call_id());
            }
        }
    }

    /// Renders one event given as its wire JSON (a durable conversation's, read from its
    /// workflow): as NDJSON, or a line for each finished call and each approval asked.
    #[cfg(feature = "temporal")]
    pub(crate) fn wire(&mut self, event: &serde_json::Value) {
        if self.is_json() {
            outln!("{event}");
            return;
        }
        let call = &event["toolCall"];
        let shown = || {
            format!(
                "{} {}",
                call["name"].as_str().unwrap_or("?"),
                shorten(&call["args"].to_string())
            )
        };
        match event["type"].as_str().unwrap_or_default() {
            "tool.completed" => {
                let mark = self.paint("32", "✓");
                outln!(
                    "  {mark} {} → {}",
                    shown(),
                    shorten(&event["result"].to_string())
                );
            }
            "tool.failed" => {
                let mark = self.paint("31", "✗");
                let code = self.paint("31", &format!("error {}", event["error"]["code"]));
                let message = event["error"]["message"].as_str().unwrap_or_default();
                outln!("  {mark} {} → {code}: {}", shown(), shorten(message));
            }
            "interrupt.requested" => {
                let interrupt = &event["interrupt"];
                let call = &interrupt["toolCall"];
                let mark = self.paint("33", "?");
                outln!(
                    "  {mark} {} {} waits for approval (call {}, fingerprint {})",
                    call["name"].as_str().unwrap_or("?"),
                    shorten(&call["args"].to_string()),
                    call["id"].as_str().unwrap_or("?"),
                    interrupt["fingerprint"].as_str().unwrap_or("?"),
                );
            }
            "tool.started" | "tool.delta" => {}
            other => outln!(
                "  · {other} {}",
                event["toolCallId"].as_str().unwrap_or_default()
            ),
        }
    }

    /// The call as shown, and how long it ran: from its dispatch, which came after the last
    /// streamed event of its step (not from its first sight, which would count the model's
    /// generation of the rest of the response).
    fn finished(&mut self, id: &str, name: &str, arguments: &str) -> (String, String) {
        let took = self
            .running
            .remove(id)
            .map_or_else(String::new, |(_, since)| {
                let dispatched = self.last_streamed.map_or(since, |last| last.max(since));
                self.paint("2", &format!("  ({})", elapsed(dispatched.elapsed())))
            });
        (format!("{name} {}", shorten(arguments)), took)
    }

    fn spin(&mut self) {
        self.frame = (self.frame + 1) % SPINNER.len();
        let mut names: Vec<&str> = self
            .running
            .values()
            .map(|(shown, _)| shown.split(' ').next().unwrap_or_default())
            .collect();
        names.sort_unstable();
        let spinner = self.paint("36", &SPINNER[self.frame].to_string());
        out!("\r\x1b[2K  {spinner} running {}", names.join(", "));
        let _ = std::io::stdout().flush();
        self.spinner_shown = true;
    }

    fn clear_spinner(&mut self) {
        if self.spinner_shown {
            out!("\r\x1b[2K");
            self.spinner_shown = false;
        }
    }

    /// `text` in an SGR colour on a colour terminal.
    fn paint(&self, sgr: &str, text: &str) -> String {
        if self.style == (Style::Terminal { colour: true }) {
            format!("\x1b[{sgr}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

fn elapsed(took: Duration) -> String {
    if took < Duration::from_millis(1) {
        format!("{} µs", took.as_micros())
    } else {
        format!("{:.1} ms", took.as_secs_f64() * 1000.0)
    }
}

/// One line of at most [`MAX_SHOWN`] characters.
fn shorten(text: &str) -> String {
    let line = text.replace('\n', "⏎");
    if line.chars().count() <= MAX_SHOWN {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_SHOWN - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use pleach_core::{ToolCall, ToolEvent};

    use super::*;

    #[test]
    fn a_calls_time_counts_from_the_end_of_its_streamed_response() {
        let mut renderer = Renderer::new(false);
        let call = ToolCall::new("c1", "math", "");
        renderer.event(&ToolEvent::Started {
            tool_call: call.clone(),
        });
        // The model goes on generating the rest of its response for a while.
        std::thread::sleep(Duration::from_millis(300));
        renderer.event(&ToolEvent::Delta {
            tool_call_id: "c1".into(),
            delta: serde_json::json!("{}"),
        });
        let (_, took) = renderer.finished("c1", "math", "{}");
        let ms: f64 = took
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim_end_matches(" ms")
            .trim_end_matches(" µs")
            .parse()
            .unwrap();
        assert!(
            took.contains("µs") || ms < 200.0,
            "the generation time was counted: {took}"
        );
    }
}
