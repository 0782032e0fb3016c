//! Gemini 3's `partialArgs`: a `jsonPath` (`$.recipe.steps[4]`) parsed into steps, and each
//! value placed into the arguments object being built, a string continued piece by piece.

use serde_json::{Map, Value};

use super::PartialArg;

/// One step of a `jsonPath`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Paths deeper than this are refused (the arguments are parsed later with a depth limit too).
const MAX_PATH_STEPS: usize = 64;
/// An index further than this past the end is refused rather than padded.
const MAX_INDEX: usize = 1 << 20;

/// Parses `$.a.b[3]['c d']` into steps.
fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let rest = path
        .strip_prefix('$')
        .ok_or_else(|| format!("the jsonPath `{path}` does not start with `$`"))?;
    let bad = || format!("the jsonPath `{path}` cannot be read");
    let mut steps = Vec::new();
    let mut chars = rest.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '.' => {
                let start = at + 1;
                let mut end = rest.len();
                while let Some(&(i, c)) = chars.peek() {
                    if c == '.' || c == '[' {
                        end = i;
                        break;
                    }
                    chars.next();
                }
                let key = &rest[start..end];
                if key.is_empty() {
                    return Err(bad());
                }
                steps.push(Step::Key(key.to_owned()));
            }
            '[' => {
                let inner_start = at + 1;
                let close = rest[inner_start..].find(']').ok_or_else(bad)? + inner_start;
                let inner = &rest[inner_start..close];
                let step = if let Some(quoted) = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                {
                    Step::Key(quoted.to_owned())
                } else {
                    let index: usize = inner.parse().map_err(|_| bad())?;
                    if index > MAX_INDEX {
                        return Err(format!("the jsonPath `{path}` has an index out of range"));
                    }
                    Step::Index(index)
                };
                steps.push(step);
                while chars.peek().is_some_and(|&(i, _)| i <= close) {
                    chars.next();
                }
            }
            _ => return Err(bad()),
        }
        if steps.len() > MAX_PATH_STEPS {
            return Err(format!(
                "the jsonPath `{path}` is deeper than {MAX_PATH_STEPS} steps"
            ));
        }
    }
    if steps.is_empty() {
        return Err(format!(
            "the jsonPath `{path}` names the whole arguments object"
        ));
    }
    Ok(steps)
}

/// Places one partial argument into the arguments object: a new value, or the next piece of a
/// string already there.
pub(super) fn place_partial_arg(root: &mut Value, arg: &PartialArg) -> Result<(), String> {
    let value = if let Some(s) = &arg.string_value {
        Value::String(s.clone())
    } else if let Some(n) = &arg.number_value {
        Value::Number(n.clone())
    } else if let Some(b) = arg.bool_value {
        Value::Bool(b)
    } else if arg.null_value {
        Value::Null
    } else {
        // Nothing to place (a bare `willContinue`).
        return Ok(());
    };
    let path = arg.json_path.as_deref().unwrap_or_default();
    let steps = parse_path(path)?;
    place(root, &steps, value).map_err(|why| format!("at `{path}`: {why}"))
}

fn place(root: &mut Value, steps: &[Step], value: Value) -> Result<(), String> {
    let Some((last, parents)) = steps.split_last() else {
        return Err("no path".to_owned());
    };
    let mut current = root;
    for (i, step) in parents.iter().enumerate() {
        let next_is_index = matches!(steps.get(i + 1), Some(Step::Index(_)));
        let empty = || {
            if next_is_index {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            }
        };
        current = match (step, current) {
            (Step::Key(key), Value::Object(map)) => map.entry(key.clone()).or_insert_with(empty),
            (Step::Index(index), Value::Array(items)) => {
                if *index == items.len() {
                    items.push(empty());
                }
                items
                    .get_mut(*index)
                    .ok_or_else(|| "the path skips array positions".to_owned())?
            }
            _ => return Err("the path goes through a value of another kind".to_owned()),
        };
        let fits = match &*current {
            Value::Array(_) => next_is_index,
            Value::Object(_) => !next_is_index,
            _ => false,
        };
        if !fits {
            return Err("the path goes through a value of another kind".to_owned());
        }
    }
    let slot = match (last, current) {
        (Step::Key(key), Value::Object(map)) => {
            if !map.contains_key(key) {
                map.insert(key.clone(), value);
                return Ok(());
            }
            map.get_mut(key)
                .ok_or_else(|| "the path goes through a value of another kind".to_owned())?
        }
        (Step::Index(index), Value::Array(items)) => {
            if *index == items.len() {
                items.push(value);
                return Ok(());
            }
            items
                .get_mut(*index)
                .ok_or_else(|| "the path skips array positions".to_owned())?
        }
        _ => return Err("the path goes through a value of another kind".to_owned()),
    };
    match (slot, value) {
        (Value::String(existing), Value::String(piece)) => {
            existing.push_str(&piece);
            Ok(())
        }
        _ => Err("a second value for the same place".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arg(path: &str, value: &Value, will_continue: bool) -> PartialArg {
        PartialArg {
            json_path: Some(path.to_owned()),
            string_value: value.as_str().map(str::to_owned),
            number_value: value.as_number().cloned(),
            bool_value: value.as_bool(),
            null_value: value.is_null(),
            will_continue: Some(will_continue),
        }
    }

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("$.recipe.ingredients[3].name").unwrap(),
            [
                Step::Key("recipe".into()),
                Step::Key("ingredients".into()),
                Step::Index(3),
                Step::Key("name".into())
            ]
        );
        assert_eq!(
            parse_path("$['a.b'][0]").unwrap(),
            [Step::Key("a.b".into()), Step::Index(0)]
        );
        for bad in [
            "",
            "$",
            "location",
            "$.",
            "$..a",
            "$[x]",
            "$[1",
            "$.a[99999999999]",
        ] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_nest_and_strings_continue() {
        let mut root = Value::Object(Map::new());
        for a in [
            arg("$.recipe.steps[0]", &json!("Pre"), true),
            arg("$.recipe.steps[0]", &json!("heat"), false),
            arg("$.recipe.steps[1]", &json!("Bake"), false),
            arg("$.recipe.serves", &json!(4), false),
            arg("$.recipe.vegan", &json!(false), false),
            arg("$.recipe.note", &Value::Null, false),
        ] {
            place_partial_arg(&mut root, &a).unwrap();
        }
        assert_eq!(
            root,
            json!({ "recipe": { "steps": ["Preheat", "Bake"], "serves": 4, "vegan": false, "note": null } })
        );
    }

    #[test]
    fn conflicting_places_are_refused() {
        let mut root = json!({ "a": 1, "list": [] });
        assert!(place_partial_arg(&mut root, &arg("$.a", &json!(2), false)).is_err());
        assert!(place_partial_arg(&mut root, &arg("$.a.b", &json!(2), false)).is_err());
        assert!(place_partial_arg(&mut root, &arg("$.list[2]", &json!(2), false)).is_err());
        assert!(place_partial_arg(&mut root, &arg("$.list.x", &json!(2), false)).is_err());
    }
}
