//! Reaching a Temporal service: `HOST:PORT` or a URL, the namespace `default`; a worker watching
//! that it still answers.

use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};

use crate::DurableError;

/// The namespace durable conversations live in.
pub(crate) const NAMESPACE: &str = "default";

/// The service's URL: `HOST:PORT` is `http://HOST:PORT`; a URL is taken as it is.
pub(crate) fn url(target: &str) -> Result<Url, DurableError> {
    let text = if target.contains("://") {
        target.to_owned()
    } else {
        format!("http://{target}")
    };
    Url::parse(&text).map_err(|error| {
        DurableError::Target(format!("`{target}` is not HOST:PORT or a URL: {error}"))
    })
}

/// A client of the service at `target`.
pub(crate) async fn connect(target: &str) -> Result<Client, DurableError> {
    let options = ConnectionOptions::new(url(target)?)
        .identity(format!("pleach@{}", std::process::id()))
        .build();
    let connection = Connection::connect(options).await.map_err(|error| {
        DurableError::Unreachable(format!("cannot reach Temporal at `{target}`: {error}"))
    })?;
    Client::new(connection, ClientOptions::new(NAMESPACE).build()).map_err(|error| {
        DurableError::Unreachable(format!("cannot use Temporal at `{target}`: {error}"))
    })
}

/// Checks the service every [`CONNECTION_CHECK`](crate::defaults::CONNECTION_CHECK), for ever,
/// saying once when it stops answering (why, in a line) and once when it answers again: a
/// worker's operator reads one line per change, not the SDK's retries.
pub(crate) async fn watch(client: &Client, target: &str) -> std::convert::Infallible {
    let mut lost = false;
    loop {
        tokio::time::sleep(crate::defaults::CONNECTION_CHECK).await;
        match answers(client).await {
            Ok(()) if lost => {
                lost = false;
                tracing::info!(
                    target: "pleach_temporal::connection",
                    "Temporal at `{target}` answers again"
                );
            }
            Err(why) if !lost => {
                lost = true;
                tracing::warn!(
                    target: "pleach_temporal::connection",
                    "lost Temporal at `{target}` ({why}); retrying until it answers"
                );
            }
            _ => {}
        }
    }
}

/// Whether the service answers a cheap request in time; why not, in words.
async fn answers(client: &Client) -> Result<(), String> {
    use temporalio_common::protos::temporal::api::workflowservice::v1::GetSystemInfoRequest;
    let mut service = client.connection().workflow_service();
    let asked = service.get_system_info(temporalio_client::tonic::Request::new(
        GetSystemInfoRequest::default(),
    ));
    match tokio::time::timeout(crate::defaults::CONNECTION_CHECK * 3, asked).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(status)) => Err(plain(status.message())),
        Err(_) => Err("no answer within 3 s".to_owned()),
    }
}

/// A gRPC status message in one line, without the transport's nesting of causes.
fn plain(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default().trim();
    if first.is_empty() {
        "no answer".to_owned()
    } else {
        first.to_owned()
    }
}
