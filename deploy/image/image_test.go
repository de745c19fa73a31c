package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestImage builds the image twice from this checkout (one build pair: the first cross-compiles for both
// platforms, the second is served from the build cache), checks the second is byte-for-byte the first, then
// opens the tarball as docker and podman would and checks what the image promises.
func TestImage(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(CABundle); err != nil {
		t.Fatalf("the CA bundle the image copies is missing (apt-get install ca-certificates): %v", err)
	}
	dir := t.TempDir()
	first, tarball := buildTwice(t, dir)
	files := untar(t, tarball, filepath.Join(dir, "layout"))
	for _, name := range []string{"oci-layout", "index.json", "manifest.json"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the tarball has no %s", name)
		}
	}
	platforms, images := checkLayout(t, filepath.Join(dir, "layout"), first)
	binaries := map[string]layerBinaries{}
	for _, p := range platforms {
		binaries[p] = checkPlatformImage(t, p, images[p], first)
	}
	checkDockerManifest(t, files, images)
	checkVersion(t, dir, binaries["linux/amd64"], first)
}

// buildTwice builds the image twice into dir, checks the two builds are the same, byte for byte, and
// of HEAD, and returns the first's result and tarball.
func buildTwice(t *testing.T, dir string) (Result, []byte) {
	t.Helper()
	build := func(name string) (Result, []byte) {
		out := filepath.Join(dir, name)
		res, err := Build(t.Context(), Options{Root: "../..", Out: out, Tag: "hookline:latest", Version: "v0.0.0-test", Source: defaultRepo, CAFile: CABundle})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}
	first, tarball1 := build("one.tar")
	second, tarball2 := build("two.tar")
	if first.Index != second.Index || !bytes.Equal(tarball1, tarball2) {
		t.Errorf("two builds of one commit differ: index %s vs %s, tarball sha256 %x vs %x",
			first.Index, second.Index, sha256.Sum256(tarball1), sha256.Sum256(tarball2))
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if first.Commit != strings.TrimSpace(string(head)) {
		t.Fatalf("commit %q, want HEAD %q", first.Commit, head)
	}
	return first, tarball1
}

// checkLayout opens the extracted tarball as an OCI layout, checks index.json names the one image index
// by the tag, and returns its platforms and their images.
func checkLayout(t *testing.T, dir string, first Result) ([]string, map[string]v1.Image) {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("index.json names %d entries, want the one image index", len(topManifest.Manifests))
	}
	entry := topManifest.Manifests[0]
	if entry.Digest != first.Index || !entry.MediaType.IsIndex() {
		t.Errorf("index.json names %s %s, want the image index %s", entry.MediaType, entry.Digest, first.Index)
	}
	for _, a := range []string{"io.containerd.image.name", "org.opencontainers.image.ref.name"} {
		if entry.Annotations[a] != "docker.io/library/hookline:latest" {
			t.Errorf("index.json annotation %s = %q, want docker.io/library/hookline:latest", a, entry.Annotations[a])
		}
	}
	index, err := top.ImageIndex(entry.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	images := map[string]v1.Image{}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s has no platform", m.Digest)
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, p)
		if images[p], err = index.Image(m.Digest); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
	return platforms, images
}

// layerBinaries are the two programs of an image's layer: the server and the command line (nil when the
// layer lacks one).
type layerBinaries struct{ server, cli []byte }

// checkPlatformImage checks platform p's image (its config, its one layer, the binaries in it) and returns
// the binaries.
func checkPlatformImage(t *testing.T, p string, img v1.Image, first Result) layerBinaries {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.OS + "/" + cf.Architecture; got != p {
		t.Errorf("%s: config says %s", p, got)
	}
	if !cf.Created.Time.Equal(first.Created) {
		t.Errorf("%s: created %s, want the commit's time %s", p, cf.Created.Time, first.Created)
	}
	checkConfig(t, p, cf.Config, first)
	binaries := checkLayer(t, p, img, first)
	for name, b := range map[string][]byte{Entrypoint: binaries.server, CLI: binaries.cli} {
		if b != nil {
			checkELF(t, p, name, b)
		}
	}
	return binaries
}

// checkConfig checks how the image says to run it: user, entrypoint, port and labels.
func checkConfig(t *testing.T, p string, c v1.Config, first Result) {
	t.Helper()
	if c.User != "65532:65532" {
		t.Errorf("%s: user %q, want 65532:65532", p, c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/hookline"}) || len(c.Cmd) != 0 {
		t.Errorf("%s: entrypoint %q cmd %q, want [/hookline] and none", p, c.Entrypoint, c.Cmd)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("%s: exposed ports %v, want 8080/tcp", p, c.ExposedPorts)
	}
	if !slices.Contains(c.Env, "PATH=/usr/local/bin") {
		t.Errorf("%s: env %q, want PATH=/usr/local/bin (where the command line is)", p, c.Env)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v0.0.0-test",
		"org.opencontainers.image.revision": first.Commit,
		"org.opencontainers.image.source":   "https://github.com/hookline/hookline",
		"org.opencontainers.image.created":  first.Created.Format(time.RFC3339),
	} {
		if c.Labels[k] != want {
			t.Errorf("%s: label %s = %q, want %q", p, k, c.Labels[k], want)
		}
	}
}

// checkLayer checks the image's one layer holds exactly the server, the command line, the CA bundle and
// /tmp, owned by 0:0 at the commit's time, and returns the two binaries.
func checkLayer(t *testing.T, p string, img v1.Image, first Result) layerBinaries {
	t.Helper()
	ca, err := os.ReadFile(CABundle)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%s: %d layers, want 1", p, len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	var binaries layerBinaries
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(first.Created) {
			t.Errorf("%s: %s owned by %d:%d (%q:%q) at %s, want 0:0 at the commit's time", p, h.Name, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "hookline", "usr/local/bin/hookline":
			if h.Mode != 0o755 {
				t.Errorf("%s: /%s mode %o, want 755", p, h.Name, h.Mode)
			}
			if h.Name == "hookline" {
				binaries.server = body
			} else {
				binaries.cli = body
			}
		case "etc/ssl/certs/ca-certificates.crt":
			if !bytes.Equal(body, ca) {
				t.Errorf("%s: the CA bundle differs from the build machine's %s", p, CABundle)
			}
		}
	}
	want := []string{"etc/", "etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt", "hookline", "tmp/",
		"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/hookline"}
	if !slices.Equal(names, want) {
		// No shell (bin/sh), no /etc/passwd, nothing else.
		t.Errorf("%s: the layer holds %v, want exactly %v", p, names, want)
	}
	return binaries
}

// checkELF checks the binary at name is a static ELF executable for p.
func checkELF(t *testing.T, p, name string, binary []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("%s: %s is not an ELF file: %v", p, name, err)
	}
	machine := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[p]
	if f.Machine != machine {
		t.Errorf("%s: %s is for %s", p, name, f.Machine)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s: %s is dynamically linked (it asks for an interpreter): scratch has no libc", p, name)
		}
	}
}

// checkDockerManifest: Docker's older image store reads manifest.json alone: it must name the amd64 config
// and layer.
func checkDockerManifest(t *testing.T, files map[string][]byte, images map[string]v1.Image) {
	t.Helper()
	var dm []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &dm); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	amdConfig, _ := images["linux/amd64"].ConfigName()
	amdLayers, _ := images["linux/amd64"].Layers()
	amdLayer, _ := amdLayers[0].Digest()
	if len(dm) != 1 || !slices.Equal(dm[0].RepoTags, []string{"hookline:latest"}) ||
		dm[0].Config != "blobs/sha256/"+amdConfig.Hex || !slices.Equal(dm[0].Layers, []string{"blobs/sha256/" + amdLayer.Hex}) {
		t.Errorf("manifest.json = %+v, want hookline:latest with the amd64 config %s and layer %s", dm, amdConfig, amdLayer)
	}
	for _, e := range dm {
		for _, path := range append([]string{e.Config}, e.Layers...) {
			if _, ok := files[path]; !ok {
				t.Errorf("manifest.json names %s, which the tarball lacks", path)
			}
		}
	}
}

// checkVersion runs the amd64 binaries' `version`, the server's and the command line's: each says the
// version and commit it was built with.
func checkVersion(t *testing.T, dir string, binaries layerBinaries, first Result) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("running the amd64 binaries needs linux/amd64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	want := "hookline v0.0.0-test commit " + first.Commit + " " + runtime.Version() + " linux/amd64\n"
	for name, binary := range map[string][]byte{"server": binaries.server, "cli": binaries.cli} {
		bin := filepath.Join(dir, "hookline-"+name)
		if err := os.WriteFile(bin, binary, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s version: %v\n%s", name, err, out)
		}
		if string(out) != want {
			t.Errorf("the %s's version printed %q, want %q", name, out, want)
		}
	}
}

// untar extracts the tarball into dir (to read it as an OCI layout) and returns its files by name.
func untar(t *testing.T, b []byte, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("entry %q escapes the layout", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = body
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
