//! TLS for the lab tool: `serve` makes a self-signed certificate at start and writes it to a
//! file; `get` trusts exactly that certificate. This is a measurement tool for loopback and
//! emulator namespaces, not a way to authenticate servers on a real network.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Name the certificate is issued to and the client asks for.
pub const SERVER_NAME: &str = "leocc-quic.invalid";

/// ALPN protocol of the bulk-transfer tool.
pub const ALPN: &[u8] = b"leocc-quic-bulk/1";

/// A fresh self-signed certificate and key; the certificate (DER) is written atomically to
/// `cert_out` so that a client can trust it.
pub fn make_server_config(cert_out: &Path, transport: quinn::TransportConfig) -> Result<quinn::ServerConfig> {
    let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()]).context("generating a certificate")?;
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    leocc_trace::write_atomic(cert_out, cert.as_ref()).map_err(|e| anyhow::anyhow!("{e}")).with_context(|| format!("writing the certificate to {}", cert_out.display()))?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 with ring")?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .context("TLS server configuration")?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).context("QUIC TLS server configuration")?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    cfg.transport_config(Arc::new(transport));
    Ok(cfg)
}

/// A client configuration trusting only the certificate in `cert` (DER, as `serve` wrote it).
pub fn make_client_config(cert: &Path, transport: quinn::TransportConfig) -> Result<quinn::ClientConfig> {
    let der = std::fs::read(cert).with_context(|| format!("reading the server certificate {} (written by `leocc quic serve --cert`)", cert.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(der)).with_context(|| format!("{}: not a DER certificate", cert.display()))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("TLS 1.3 with ring")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).context("QUIC TLS client configuration")?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    cfg.transport_config(Arc::new(transport));
    Ok(cfg)
}
