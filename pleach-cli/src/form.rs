//! A running tool's question to the user (`elicitation.requested`, `ToolContext::elicit`) asked
//! on the terminal in `chat` and `call`: the tool's message, then one prompt a field of its form
//! (title or name, description, type, choices, default, `*` when required). Empty input takes the
//! default; a value of the wrong kind, or one the whole answer's check refuses (a length, a
//! range, a format), asks that field again. The user can decline the question or cancel it
//! (`c`, or end of input). Without a terminal nobody can answer: the question is declined,
//! saying so on stderr.

use std::io::{self, BufRead, BufReader, Write};

use pleach_core::ToolDefinition;
use pleach_core::client::{Elicitation, Elicited};
use pleach_core::event::ClientRequest;
use serde_json::{Map, Value};

/// What an `elicitation.requested` event carries.
pub(crate) type Question = ClientRequest<Elicitation, Elicited<Value>>;

/// Asks the user `question` on the controlling terminal (stdin may be the conversation's) and
/// gives the tool the answer; declines it when there is no terminal to ask on.
pub(crate) fn answer(question: &Question) {
    let asked = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .and_then(|terminal| {
            let mut prompt = terminal.try_clone()?;
            ask(
                question.request(),
                &mut BufReader::new(terminal),
                &mut prompt,
            )
        });
    let answer = asked.unwrap_or_else(|error| {
        eprintln!(
            "pleach: declined the question of call {} (no terminal to ask on: {error}); run it \
             where the user can answer",
            question.tool_call_id()
        );
        Elicited::Decline
    });
    if !question.answer(answer) {
        eprintln!(
            "pleach: call {} no longer waits for the answer (it timed out or was cancelled)",
            question.tool_call_id()
        );
    }
}

/// Asks `question` on `output`, reading the user's lines from `input`: the answer, or
/// `Cancel` when the input ends.
fn ask(
    question: &Elicitation,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> io::Result<Elicited<Value>> {
    writeln!(output, "question: {}", question.message)?;
    if let Some(description) = question.schema.get("description").and_then(Value::as_str) {
        writeln!(output, "  {description}")?;
    }
    loop {
        write!(output, "answer it? [Y/n (decline)/c (cancel)] ")?;
        output.flush()?;
        let Some(line) = read_line(input)? else {
            return Ok(Elicited::Cancel);
        };
        match line.to_ascii_lowercase().as_str() {
            "" | "y" | "yes" => break,
            "n" | "no" => return Ok(Elicited::Decline),
            "c" | "cancel" => return Ok(Elicited::Cancel),
            _ => writeln!(output, "  y, n or c")?,
        }
    }
    let fields = Field::all(&question.schema);
    if fields.iter().any(|field| field.required) {
        writeln!(
            output,
            "  (* required; empty input takes the default shown)"
        )?;
    }
    let check = Check::new(&question.schema);
    let mut values = Map::new();
    let mut asked: Vec<&Field> = fields.iter().collect();
    loop {
        for field in asked {
            match field.ask(input, output)? {
                Asked::Value(value) => {
                    values.insert(field.name.clone(), value);
                }
                Asked::Omitted => {
                    values.remove(&field.name);
                }
                Asked::Ended => return Ok(Elicited::Cancel),
            }
        }
        let answer = Value::Object(values.clone());
        let problems = check.problems(&answer);
        if problems.is_empty() {
            return Ok(Elicited::Accept(answer));
        }
        // The fields the problems are at, asked again; a problem of the whole form asks every
        // field.
        for (path, message) in &problems {
            match path.trim_start_matches('/').split('/').next() {
                Some(name) if !name.is_empty() => writeln!(output, "  {name}: {message}")?,
                _ => writeln!(output, "  {message}")?,
            }
        }
        asked = fields
            .iter()
            .filter(|field| {
                problems.iter().any(|(path, _)| {
                    path.trim_start_matches('/').split('/').next() == Some(field.name.as_str())
                })
            })
            .collect();
        if asked.is_empty() {
            asked = fields.iter().collect();
        }
    }
}

/// One line from `input`, without its line break and surrounding blanks; `None` at its end.
fn read_line(input: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

/// The whole answer checked against the form's schema.
struct Check(Option<ToolDefinition>);

impl Check {
    fn new(schema: &Value) -> Check {
        // The form's schema checked by the validator every tool's arguments go through; a
        // schema it cannot compile leaves the answer to the tool's own check.
        Check(
            ToolDefinition::builder("form", "The question's form.")
                .input_schema(schema.clone())
                .execute_json(|value, _| async move { Ok::<_, pleach_core::ToolError>(value) })
                .ok(),
        )
    }

    /// What is wrong with `answer`: where (a JSON pointer) and what, for each problem.
    fn problems(&self, answer: &Value) -> Vec<(String, String)> {
        let Some(definition) = &self.0 else {
            return Vec::new();
        };
        let verdict = definition.validate_arguments(&answer.to_string());
        verdict
            .errors
            .into_iter()
            .map(|error| (error.path, error.message))
            .collect()
    }
}

/// One property of the form.
struct Field {
    name: String,
    title: Option<String>,
    description: Option<String>,
    kind: Kind,
    default: Option<Value>,
    required: bool,
}

/// What a field takes.
enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of these values (each with its title, if it has one).
    OneOf(Vec<(Value, Option<String>)>),
    /// Any of these values, several at once.
    AnyOf(Vec<(Value, Option<String>)>),
}

/// What the user gave for a field.
enum Asked {
    Value(Value),
    Omitted,
    Ended,
}

impl Field {
    /// The form's fields, in the order of their names (a schema's properties are a map).
    fn all(schema: &Value) -> Vec<Field> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        let mut fields: Vec<Field> = properties
            .iter()
            .map(|(name, property)| Field {
                name: name.clone(),
                title: text(property, "title"),
                description: text(property, "description"),
                kind: Kind::of(property),
                default: property.get("default").cloned(),
                required: required.contains(&name.as_str()),
            })
            .collect();
        fields.sort_by(|a, b| a.name.cmp(&b.name));
        fields
    }

    /// Asks the field until the user gives a value of its kind (or nothing, where it has a
    /// default or is optional).
    fn ask(&self, input: &mut impl BufRead, output: &mut impl Write) -> io::Result<Asked> {
        let label = self.title.as_deref().unwrap_or(&self.name);
        let mark = if self.required { " *" } else { "" };
        if let Some(description) = &self.description {
            writeln!(output, "  {description}")?;
        }
        if let Kind::OneOf(choices) | Kind::AnyOf(choices) = &self.kind {
            for (index, (value, title)) in choices.iter().enumerate() {
                let shown = shown(value);
                match title {
                    Some(title) if *title != shown => {
                        writeln!(output, "    {}) {title} ({shown})", index + 1)?;
                    }
                    _ => writeln!(output, "    {}) {shown}", index + 1)?,
                }
            }
        }
        let default = self
            .default
            .as_ref()
            .map_or_else(String::new, |value| format!(" [{}]", shown(value)));
        loop {
            write!(output, "  {label}{mark} ({}){default}: ", self.kind.hint())?;
            output.flush()?;
            let Some(line) = read_line(input)? else {
                return Ok(Asked::Ended);
            };
            if line.is_empty() {
                if let Some(default) = &self.default {
                    return Ok(Asked::Value(default.clone()));
                }
                if !self.required {
                    return Ok(Asked::Omitted);
                }
                writeln!(output, "  {label} is required")?;
                continue;
            }
            match self.kind.read(&line) {
                Ok(value) => return Ok(Asked::Value(value)),
                Err(problem) => writeln!(output, "  {problem}")?,
            }
        }
    }
}

impl Kind {
    fn of(property: &Value) -> Kind {
        if let Some(choices) = choices(property) {
            return Kind::OneOf(choices);
        }
        match property.get("type").and_then(Value::as_str) {
            Some("integer") => Kind::Integer,
            Some("number") => Kind::Number,
            Some("boolean") => Kind::Boolean,
            Some("array") => match property.get("items").and_then(choices) {
                Some(choices) => Kind::AnyOf(choices),
                None => Kind::Text,
            },
            _ => Kind::Text,
        }
    }

    /// How the prompt names what the field takes.
    fn hint(&self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Boolean => "y/n",
            Kind::OneOf(_) => "a number or value above",
            Kind::AnyOf(_) => "numbers or values above, comma-separated",
        }
    }

    /// The value `line` gives, or what is wrong with it.
    fn read(&self, line: &str) -> Result<Value, String> {
        match self {
            Kind::Text => Ok(Value::String(line.to_owned())),
            Kind::Integer => line
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{line}` is not an integer")),
            Kind::Number => line
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("`{line}` is not a number")),
            Kind::Boolean => match line.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Value::Bool(true)),
                "n" | "no" | "false" => Ok(Value::Bool(false)),
                _ => Err(format!("`{line}`: answer y or n")),
            },
            Kind::OneOf(choices) => pick(choices, line),
            Kind::AnyOf(choices) => line
                .split(',')
                .map(str::trim)
                .filter(|part| !part.is_empty())
                .map(|part| pick(choices, part))
                .collect::<Result<Vec<Value>, String>>()
                .map(Value::Array),
        }
    }
}

/// The choice `given` names: its number in the list, its value or its title.
fn pick(choices: &[(Value, Option<String>)], given: &str) -> Result<Value, String> {
    let by_number = given
        .parse::<usize>()
        .ok()
        .and_then(|number| number.checked_sub(1))
        .and_then(|index| choices.get(index));
    by_number
        .or_else(|| {
            choices
                .iter()
                .find(|(value, title)| shown(value) == given || title.as_deref() == Some(given))
        })
        .map(|(value, _)| value.clone())
        .ok_or_else(|| {
            format!(
                "`{given}` is not one of the choices (1 to {}, or a value)",
                choices.len()
            )
        })
}

/// A property's choices: `enum` (titled by `enumNames`), or `oneOf`/`anyOf` of `const`s
/// (titled by their `title`).
fn choices(property: &Value) -> Option<Vec<(Value, Option<String>)>> {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let names = property.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(index, value)| {
                    let name = names
                        .and_then(|names| names.get(index))
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    (value.clone(), name)
                })
                .collect(),
        );
    }
    let branches = property
        .get("oneOf")
        .or_else(|| property.get("anyOf"))
        .and_then(Value::as_array)?;
    let choices: Vec<(Value, Option<String>)> = branches
        .iter()
        .filter_map(|branch| Some((branch.get("const")?.clone(), text(branch, "title"))))
        .collect();
    (!choices.is_empty()).then_some(choices)
}

fn text(schema: &Value, key: &str) -> Option<String> {
    schema.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A value as the user types it: a string without quotes, anything else as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `question` asked with `typed` as the user's lines: the answer and what was printed.
    fn asked(schema: Value, typed: &str) -> (Elicited<Value>, String) {
        let question = Elicitation::with_schema("Book a table?", schema).unwrap();
        let mut printed = Vec::new();
        let answer = ask(&question, &mut typed.as_bytes(), &mut printed).unwrap();
        (answer, String::from_utf8(printed).unwrap())
    }

    fn booking() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "minLength": 2},
                "guests": {"type": "integer", "description": "How many of you", "minimum": 1, "maximum": 8, "default": 2},
                "seating": {"type": "string", "oneOf": [
                    {"const": "in", "title": "Inside"},
                    {"const": "out", "title": "Terrace"}
                ]},
                "extras": {"type": "array", "items": {"type": "string", "enum": ["cake", "wine", "flowers"]}},
                "vegan": {"type": "boolean"}
            },
            "required": ["name", "guests"]
        })
    }

    #[test]
    fn each_field_is_asked_by_its_schema_and_defaults_fill_empty_input() {
        let (answer, printed) = asked(booking(), "\n1, wine\n\nAda\n2\nn\n");
        assert_eq!(
            answer,
            Elicited::Accept(json!({
                "name": "Ada", "guests": 2, "seating": "out", "extras": ["cake", "wine"], "vegan": false
            }))
        );
        assert!(printed.contains("question: Book a table?"), "{printed}");
        assert!(printed.contains("Your name * (text): "), "{printed}");
        assert!(printed.contains("How many of you"), "{printed}");
        assert!(printed.contains("guests * (integer) [2]: "), "{printed}");
        assert!(printed.contains("2) Terrace (out)"), "{printed}");
        assert!(printed.contains("3) flowers"), "{printed}");
        assert!(printed.contains("vegan (y/n): "), "{printed}");
    }

    #[test]
    fn a_bad_value_asks_its_field_again() {
        // Not an integer, not a choice; then the whole answer's check: 9 guests too many, a
        // name too short: those two fields asked again, in order.
        let (answer, printed) = asked(booking(), "y\n\nmany\n9\nA\nsun\nin\n\n3\nAl\n");
        assert_eq!(
            answer,
            Elicited::Accept(json!({ "name": "Al", "guests": 3, "seating": "in" }))
        );
        assert!(printed.contains("`many` is not an integer"), "{printed}");
        assert!(
            printed.contains("`sun` is not one of the choices"),
            "{printed}"
        );
        assert!(printed.contains("name: "), "{printed}");
        assert!(printed.contains("guests: "), "{printed}");
    }

    #[test]
    fn a_required_field_without_a_default_takes_no_empty_answer() {
        let (answer, printed) = asked(booking(), "y\n\n\n\nBo\n\n\n");
        assert_eq!(
            answer,
            Elicited::Accept(json!({ "name": "Bo", "guests": 2 }))
        );
        assert!(printed.contains("Your name is required"), "{printed}");
    }

    #[test]
    fn the_user_can_decline_or_cancel_and_the_end_of_input_cancels() {
        assert_eq!(asked(booking(), "n\n").0, Elicited::Decline);
        assert_eq!(asked(booking(), "c\n").0, Elicited::Cancel);
        assert_eq!(asked(booking(), "").0, Elicited::Cancel);
        assert_eq!(asked(booking(), "y\nAda\n").0, Elicited::Cancel);
        let (answer, printed) = asked(booking(), "maybe\nn\n");
        assert_eq!(answer, Elicited::Decline);
        assert!(printed.contains("y, n or c"), "{printed}");
    }
}
