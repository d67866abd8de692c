/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-egress-allow.c: allowlist names: normalization, exact and wildcard matching, refused bytes, and
 * the policy defaults file. */
#include "sidecar/egress-allow.h"
#include "tests.h"

TEST_MAIN();

static bool norm_ok(const char *s, const char *expected) {
        _cleanup_free_ char *n = NULL;

        if (egress_name_normalize(s, strlen(s), &n) < 0)
                return expected == NULL;
        return expected && streq(n, expected);
}

TEST(normalize) {
        ASSERT_TRUE(norm_ok("Registry.Example.org", "registry.example.org"));
        ASSERT_TRUE(norm_ok("registry.example.org.", "registry.example.org"));
        ASSERT_TRUE(norm_ok("xn--bcher-kva.example", "xn--bcher-kva.example"));
        ASSERT_TRUE(norm_ok("a-b.c0", "a-b.c0"));
        ASSERT_TRUE(norm_ok("localhost", "localhost"));
}

TEST(normalize_refuses) {
        static const char *const bad[] = {
                "", ".", "registry.example.org..", ".registry.example.org", "regis try.org", "registry_example.org",
                "-a.com", "a-.com", "a..b",
                "bücher.example", "a.b\x01", "*.x.com", "127.0.0.1", "127.1", "2130706433", "0x7f.1.2.3",
                "a.123", "a/b.com", "a:b.com", "[::1]",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (!norm_ok(bad[i], NULL))
                        TEST_FAIL_("accepted '%s'", bad[i]);
}

TEST(normalize_lengths) {
        char label[80], name[400];

        memset(label, 'a', 63);
        label[63] = 0;
        snprintf(name, sizeof name, "%s.com", label);
        ASSERT_TRUE(norm_ok(name, name));
        memset(label, 'a', 64);
        label[64] = 0;
        snprintf(name, sizeof name, "%s.com", label);
        ASSERT_TRUE(norm_ok(name, NULL));
        /* 4 x 63 + 3 dots = 255 > 253 */
        memset(label, 'a', 63);
        label[63] = 0;
        snprintf(name, sizeof name, "%s.%s.%s.%s", label, label, label, label);
        ASSERT_TRUE(norm_ok(name, NULL));
        name[249] = 0; /* 249 + "." trailing dot is still fine */
        ASSERT_TRUE(norm_ok(name, name));
}

TEST(match_exact_and_wildcard) {
        _cleanup_(egress_allow_done) EgressAllow a = {};

        ASSERT_OK(egress_allow_add(&a, "Git.Example.net."));
        ASSERT_OK(egress_allow_add(&a, "*.mirror.example.net"));
        ASSERT_TRUE(egress_allow_match(&a, "git.example.net"));
        ASSERT_FALSE(egress_allow_match(&a, "api.git.example.net"));
        ASSERT_FALSE(egress_allow_match(&a, "evilgit.example.net"));
        ASSERT_TRUE(egress_allow_match(&a, "raw.mirror.example.net"));
        ASSERT_TRUE(egress_allow_match(&a, "a.b.mirror.example.net"));
        /* A wildcard matches subdomains only, never the bare suffix. */
        ASSERT_FALSE(egress_allow_match(&a, "mirror.example.net"));
        ASSERT_FALSE(egress_allow_match(&a, "xmirror.example.net"));
        ASSERT_FALSE(egress_allow_match(&a, "mirror.example.net.evil.com"));
        ASSERT_EQ(2, egress_allow_size(&a));
}

TEST(add_refuses) {
        _cleanup_(egress_allow_done) EgressAllow a = {};

        ASSERT_ERROR(EINVAL, egress_allow_add(&a, "*.com"));
        ASSERT_ERROR(EINVAL, egress_allow_add(&a, "*"));
        ASSERT_ERROR(EINVAL, egress_allow_add(&a, "a.*.com"));
        ASSERT_ERROR(EINVAL, egress_allow_add(&a, "**.a.com"));
        ASSERT_ERROR(EINVAL, egress_allow_add(&a, "10.0.0.1"));
        ASSERT_ERROR(EINVAL, egress_allow_add(&a, "bücher.de"));
        ASSERT_EQ(0, egress_allow_size(&a));
}

TEST(policy_defaults_file) {
        _cleanup_(egress_allow_done) EgressAllow a = {};
        _cleanup_free_ char *error = NULL;

        ASSERT_OK(egress_allow_load_file(&a, POND_SOURCE_ROOT "/policy/egress.json", &error));
        ASSERT_TRUE(egress_allow_match(&a, "registry.example.org"));
        ASSERT_TRUE(egress_allow_match(&a, "git.example.org"));
        ASSERT_TRUE(egress_allow_match(&a, "objects.mirror.example.org"));
        ASSERT_FALSE(egress_allow_match(&a, "example.com"));
}

TEST(bad_files) {
        _cleanup_(egress_allow_done) EgressAllow a = {};
        char path[] = "/tmp/test-egress-allow-XXXXXX";
        _cleanup_free_ char *error = NULL;
        const char *text = "{\"allow_hosts\": [\"ok.example\", \"bad host\"]}";
        int fd = mkstemp(path);

        ASSERT_TRUE(fd >= 0);
        ASSERT_TRUE(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
        ASSERT_ERROR(EINVAL, egress_allow_load_file(&a, path, &error));
        ASSERT_CONTAINS("bad host", error);
        unlink(path);
}
