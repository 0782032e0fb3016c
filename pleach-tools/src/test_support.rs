//! What every tool's tests check of a refusal: code 1001 (the model can fix it), recoverable, and a
//! message that starts in lowercase, as the project writes them.

use std::fmt::Debug;

use pleach_core::{ErrorCode, ToolError};

/// The message of the refusal `outcome` must be; `what` names the input in the panic message.
#[track_caller]
pub(crate) fn refusal<T: Debug>(outcome: Result<T, ToolError>, what: &dyn Debug) -> String {
    match outcome {
        Ok(out) => panic!("{what:.200?} gave {out:.200?}, expected an error"),
        Err(err) => {
            assert_eq!(err.code(), ErrorCode::InputInvalid, "{}", err.message());
            assert!(err.is_recoverable(), "{}", err.message());
            let first = err.message().chars().next();
            assert!(
                first.is_some_and(|c| !c.is_uppercase()),
                "{}",
                err.message()
            );
            err.message().to_owned()
        }
    }
}
