//! Durable conversations on Temporal (feature `temporal`, `docs/durable.md`): `pleach worker`
//! runs them, `pleach chat --temporal` starts one and follows it, `pleach approve` decides on a
//! waiting call, `pleach status` says where one stands. `approve` and `status` need no worker.

pub(crate) mod approve;
pub(crate) mod chat;
pub(crate) mod status;
pub(crate) mod worker;

use pleach_temporal::{DurableClient, DurableError};

use crate::usage::UsageError;

/// The Temporal service `worker`, `approve` and `status` use without `--temporal` or
/// `TEMPORAL_ADDRESS` (the Temporal CLI's variable): a dev server's default.
const DEFAULT_ADDRESS: &str = "127.0.0.1:7233";

/// A client of the Temporal service at `target`.
async fn connect(target: &str) -> Result<DurableClient, UsageError> {
    DurableClient::connect(target)
        .await
        .map_err(|error| usage(&error))
}

/// A failure of the durable client, as the user reads it.
fn usage(error: &DurableError) -> UsageError {
    UsageError(error.to_string())
}
