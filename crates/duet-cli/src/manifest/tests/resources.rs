//! Resources with inline text or a file, the file read on each request.

use super::*;
use duet::layer::ResourceBody;

#[tokio::test]
async fn resources_serve_text_and_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("readme.md"), "# one").unwrap();
    std::fs::write(dir.path().join("logo.bin"), [0xff, 0x00, 0xfe]).unwrap();
    let r = registry_in(
        dir.path(),
        r#"
[[resource]]
uri = "test://static"
name = "static"
description = "written inline"
text = "hello"

[[resource]]
uri = "test://readme"
name = "readme"
file = "readme.md"

[[resource]]
uri = "test://logo"
name = "logo"
mime_type = "image/x-test"
file = "logo.bin"
"#,
    );
    let listed = r.resources(&Principal::local());
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].about.description.as_deref(), Some("written inline"));
    assert_eq!(listed[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(listed[1].mime_type.as_deref(), Some("text/markdown"));

    let stat = read(&r, "test://static").await;
    assert_eq!(stat[0].body, ResourceBody::Text("hello".into()));
    assert_eq!(read(&r, "test://readme").await[0].body, ResourceBody::Text("# one".into()));
    // Read on each request.
    std::fs::write(dir.path().join("readme.md"), "# two").unwrap();
    let readme = read(&r, "test://readme").await;
    assert_eq!(readme[0].body, ResourceBody::Text("# two".into()));
    assert_eq!(readme[0].mime_type.as_deref(), Some("text/markdown"));
    let logo = read(&r, "test://logo").await;
    assert_eq!(logo[0].body, ResourceBody::Blob("/wD+".into()));
    assert_eq!(logo[0].mime_type.as_deref(), Some("image/x-test"));

    std::fs::remove_file(dir.path().join("readme.md")).unwrap();
    let gone = r.read_resource("test://readme", cx()).await;
    assert!(matches!(gone, Err(LayerError::NotFound(_))), "{gone:?}");
}
