/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pond-broker: the per-job credential broker, run by pond-broker@ID.service. Options into arg_*, the
 * configuration and price table, the credentials' secrets, the listening socket (from the
 * configuration), then the server in broker-server.c. See docs/broker.md. */
#include <ctype.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "broker-price.h"
#include "broker-server.h"
#include "secrets/keys.h"
#include "secrets/seal.h"
#include "sidecar/broker-config.h"
#include "sidecar/sidecar-args.h"
#include "sidecar/socket-util.h"

#define TEST_SECRETS_MAX BROKER_CREDENTIALS_MAX

static const char *arg_config_file;
static const char *arg_ca_file;
static const char *arg_stats_file;
static const char *arg_key_dir;
static unsigned arg_ceiling_grace = 10;
static const char *arg_test_secrets[TEST_SECRETS_MAX];
static size_t arg_n_test_secrets;

static void help(void) {
        printf("Usage: pond-broker --config FILE [OPTIONS]\n\n"
               "The per-job model-API credential broker of pond. Normally started by pond-broker@ID.service.\n\n"
               "  --config FILE           the job's broker configuration (JSON, docs/broker.md)\n"
               "  --ca-file FILE          trust only these CA certificates upstream (default: system store)\n"
               "  --stats-file FILE       JSON totals at the ceiling and at exit (overrides stats_file)\n"
               "  --key-dir DIR           the worker's seal.key/seal.pub, to open the sealed credentials\n"
               "  --ceiling-grace S       keep answering 402 this long after the cost ceiling (default 10)\n"
               "  --secret NAME=FILE      TEST ONLY (needs POND_BROKER_TEST=1): the real key from a file\n"
               "  --debug                 debug logging\n"
               "Exit status: 0 stopped, 1 configuration or start-up error, 3 cost ceiling reached.\n");
}

static int parse_option(int c, const char *optarg_) {
        char *end;
        unsigned long v;

        switch (c) {
        case 'A':
                arg_ca_file = optarg_;
                return 0;
        case 's':
                arg_stats_file = optarg_;
                return 0;
        case 'k':
                arg_key_dir = optarg_;
                return 0;
        case 'g':
                errno = 0;
                v = strtoul(optarg_, &end, 10);
                if (errno || *end || optarg_[0] < '0' || optarg_[0] > '9' || v > 3600)
                        return log_error_errno(EINVAL, "Invalid --ceiling-grace '%s': 0..3600 seconds.", optarg_);
                arg_ceiling_grace = (unsigned) v;
                return 0;
        case 'S':
                /* Test only: production secrets arrive sealed and are opened in memory, never read from a
                 * plain file named on a command line. */
                if (!getenv("POND_BROKER_TEST") || !streq(getenv("POND_BROKER_TEST"), "1"))
                        return log_error_errno(EPERM, "--secret is for tests only (set POND_BROKER_TEST=1).");
                if (arg_n_test_secrets >= TEST_SECRETS_MAX || !strchr(optarg_, '='))
                        return log_error_errno(EINVAL, "Invalid --secret '%s': NAME=FILE, at most %d.", optarg_,
                                               TEST_SECRETS_MAX);
                arg_test_secrets[arg_n_test_secrets++] = optarg_;
                return 0;
        default:
                return -EINVAL;
        }
}

/* The shared command line's refusals are fragments (pond-egress's status text): here, sentences. */
static int refuse(int r, const char *fmt, ...) _printf_(2, 3);
static int refuse(int r, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;

        va_start(ap, fmt);
        why = strdupf_va(fmt, ap);
        va_end(ap);
        if (!why)
                return log_oom();
        why[0] = (char) toupper((unsigned char) why[0]);
        return log_error_errno(r, "%s.", why);
}

static const SidecarArgs args = {
        .program = "pond-broker",
        .options = (const struct option[]) {
                { "ca-file", required_argument, NULL, 'A' },
                { "stats-file", required_argument, NULL, 's' },
                { "key-dir", required_argument, NULL, 'k' },
                { "ceiling-grace", required_argument, NULL, 'g' },
                { "secret", required_argument, NULL, 'S' },
                {}
        },
        .help = help,
        .parse_option = parse_option,
        .refuse = refuse,
};

/* Test only (--secret NAME=FILE): the file's first line is the key; the buffer is wiped. */
static int load_test_secret(BrokerConfig *config, const char *spec) {
        const char *eq = strchr(spec, '=');
        BrokerCredential *cred = broker_config_find(config, spec, (size_t) (eq - spec));
        char *text = NULL;
        size_t len;
        int r;

        if (!cred)
                return log_error_errno(ENOENT, "--secret: no credential named '%.*s'.", (int) (eq - spec), spec);
        r = read_full_file(eq + 1, BROKER_KEY_MAX + 2, &text, &len);
        if (r < 0)
                return log_error_errno(r, "--secret: failed to read '%s': %m", eq + 1);
        len = strcspn(text, "\r\n");
        r = broker_credential_set_secret(cred, text, len);
        sodium_memzero(text, len);
        free(text);
        if (r < 0)
                return log_error_errno(r, "--secret: invalid key for '%s' (printable ASCII, no spaces): %m",
                                       cred->name);
        return 0;
}

/* Set when a credential does not open: the exit status says so (BROKER_EXIT_CREDENTIAL). */
static bool credential_refused;

/* Each credential's sealed blob, opened with the worker's X25519 key for exactly this job: a blob sealed
 * for another job or another worker, or altered, is refused and the broker does not start. */
static int unseal_secrets(BrokerConfig *config) {
        _cleanup_secret_ uint8_t *sk = NULL;
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        int r;

        if (!arg_key_dir)
                return 0;
        r = keys_load_seal_secret(arg_key_dir, &sk);
        if (r >= 0)
                r = keys_load_seal_public(arg_key_dir, pk);
        if (r < 0)
                return log_error_errno(r, "Cannot load the worker's sealing key from %s: %m", arg_key_dir);
        for (size_t i = 0; i < config->n_credentials; i++) {
                BrokerCredential *c = &config->credentials[i];
                _cleanup_secret_ uint8_t *secret = NULL;
                _cleanup_free_ char *error = NULL;
                size_t len;

                if (!c->sealed)
                        continue;
                r = unseal_credential(pk, sk, config->job_id, c->sealed, &secret, &len, &error);
                if (r < 0)
                        credential_refused = true;
                if (r < 0)
                        return log_error_errno(r, "Credential '%s' refused: %s", c->name, error ?: "cannot unseal");
                r = broker_credential_set_secret(c, secret, len);
                if (r < 0)
                        return log_error_errno(r, "Cannot keep credential '%s': %m", c->name);
        }
        return 0;
}

static int load_secrets(BrokerConfig *config) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = unseal_secrets(config);
        if (r < 0)
                return r;
        for (size_t i = 0; i < arg_n_test_secrets; i++) {
                r = load_test_secret(config, arg_test_secrets[i]);
                if (r < 0)
                        return r;
        }
        r = broker_config_check_secrets(config, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "A credential has no secret.");
        return 0;
}

static int run(BrokerConfig *config, BrokerPrices *prices) {
        _cleanup_free_ char *error = NULL;
        BrokerOptions o = { .config = config, .prices = prices, .ca_file = arg_ca_file,
                            .ceiling_grace_sec = arg_ceiling_grace };
        int r;

        if (sodium_init() < 0)
                return log_error_errno(EIO, "Failed to initialize libsodium.");
        r = broker_config_load(arg_config_file, config, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Failed to load the configuration.");
        o.stats_file = arg_stats_file ?: config->stats_file;
        r = broker_prices_load(config->prices, prices, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Failed to load the price table.");
        r = load_secrets(config);
        if (r < 0)
                return r;
        if (!config->listen)
                return log_error_errno(EINVAL, "The configuration has no 'listen' address.");
        r = socket_listen_tcp(config->listen, &o.listen_fd);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on '%s' (ADDR:PORT or [V6]:PORT): %m", config->listen);
        log_info("Job %s: %zu credentials, budget %" PRIu64 " cents, listening.", config->job_id,
                 config->n_credentials, config->max_cost_cents);
        r = broker_server_run(&o);
        if (r < 0)
                return log_error_errno(r, "Broker failed: %m");
        return r;
}

int main(int argc, char *argv[]) {
        BrokerConfig config = {};
        BrokerPrices prices = {};
        int r;

        r = sidecar_args_parse(&args, argc, argv, &arg_config_file);
        if (r > 0)
                r = run(&config, &prices);
        broker_config_done(&config);
        broker_prices_done(&prices);
        if (r < 0)
                return credential_refused ? BROKER_EXIT_CREDENTIAL : 1;
        return r == BROKER_EXIT_CEILING ? BROKER_EXIT_CEILING : 0;
}
