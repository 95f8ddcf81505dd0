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
    leocc_base::write_atomic(cert_out, cert.as_ref()).map_err(|e| anyhow::anyhow!("{e}")).with_context(|| format!("writing the certificate to {}", cert_out.display()))?;
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

/// A fresh directory only the server's user can enter (mode 0700, a random name made by
/// mkdtemp(3) under `$TMPDIR`), holding the run's certificate; removed on drop.
///
/// A certificate at a predictable shared path (`/tmp/leocc-quic-PORT.der`) could be replaced
/// or pre-created by another local user between the server's write and the client's read, and
/// the client would then trust that user's server; it also outlived the server.
#[derive(Debug)]
pub struct PrivateCertDir {
    dir: std::path::PathBuf,
}

impl PrivateCertDir {
    /// File name of the certificate inside the directory.
    pub const CERT_NAME: &'static str = "cert.der";

    /// Makes the directory under [`std::env::temp_dir`].
    pub fn create() -> Result<PrivateCertDir> {
        Self::create_in(&std::env::temp_dir())
    }

    /// Makes the directory under `parent`.
    pub fn create_in(parent: &Path) -> Result<PrivateCertDir> {
        use std::os::unix::ffi::OsStringExt;
        let template = parent.join("leocc-quic-XXXXXX");
        let mut bytes = template.into_os_string().into_vec();
        bytes.push(0);
        // SAFETY: `bytes` is a NUL-terminated template that mkdtemp rewrites in place (the six
        // X's only); it creates the directory with mode 0700.
        let p = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if p.is_null() {
            let e = std::io::Error::last_os_error();
            return Err(anyhow::anyhow!("making a private directory for the certificate in {}: {e}", parent.display()));
        }
        bytes.pop();
        Ok(PrivateCertDir { dir: std::path::PathBuf::from(std::ffi::OsString::from_vec(bytes)) })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the certificate goes.
    pub fn cert_path(&self) -> std::path::PathBuf {
        self.dir.join(Self::CERT_NAME)
    }
}

impl Drop for PrivateCertDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_private_directory_is_0700_unique_and_removed() {
        let a = PrivateCertDir::create().unwrap();
        let b = PrivateCertDir::create().unwrap();
        assert_ne!(a.dir(), b.dir(), "a fresh name per run");
        assert_eq!(std::fs::metadata(a.dir()).unwrap().permissions().mode() & 0o777, 0o700);
        let cfg = make_server_config(&a.cert_path(), quinn::TransportConfig::default());
        assert!(cfg.is_ok());
        assert!(a.cert_path().exists());
        let dir = a.dir().to_path_buf();
        drop(a);
        assert!(!dir.exists(), "removed with its certificate");
        let e = PrivateCertDir::create_in(Path::new("/nonexistent-leocc")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent-leocc"), "{e}");
    }
}
