/* The reference layers against values computed by hand. */
#include "cpu/ref.h"
#include "nc_test.h"

static void test_conv(void) {
    /* x is (1, 2, 3, 3), k is (2, 2, 2, 2): y is (1, 2, 2, 2). */
    const float x[18] = {1, 2, 3, 4, 5, 6, 7, 8, 9,  /* channel 0 */
                         0, 1, 0, 1, 0, 1, 0, 1, 0}; /* channel 1 */
    const float k[16] = {1, 0, 0, 1,                 /* m0 c0: x[h][w] + x[h+1][w+1] */
                         2, 0, 0, 0,                 /* m0 c1: 2 * x1[h][w] */
                         0, 0, 0, 0,                 /* m1 c0 */
                         1, 1, 1, 1};                /* m1 c1: sum of the 2x2 window of channel 1 */
    const float bias[2] = {0.5f, -1.0f};
    float y[8];
    nc_ref_conv(y, x, k, NULL, 1, 2, 3, 3, 2, 2);
    /* m0: x0[h][w] + x0[h+1][w+1] + 2 x1[h][w] */
    CHECK(y[0] == 1 + 5 + 0 && y[1] == 2 + 6 + 2 && y[2] == 4 + 8 + 2 && y[3] == 5 + 9 + 0);
    /* m1: channel 1 windows: {0,1,1,0}=2, {1,0,0,1}=2, {1,0,0,1}=2, {0,1,1,0}=2 */
    CHECK(y[4] == 2 && y[5] == 2 && y[6] == 2 && y[7] == 2);
    nc_ref_conv(y, x, k, bias, 1, 2, 3, 3, 2, 2);
    CHECK(y[0] == 6.5f && y[3] == 14.5f && y[4] == 1.0f);

    /* Batch of two: the second image is the first doubled, so its outputs double (no bias). */
    float x2[36], y2[16];
    for (int i = 0; i < 18; i++) x2[i] = x[i], x2[18 + i] = 2 * x[i];
    nc_ref_conv(y2, x2, k, NULL, 2, 2, 3, 3, 2, 2);
    int ok = 1;
    for (int i = 0; i < 8; i++) ok &= y2[8 + i] == 2 * y2[i];
    CHECK(ok);

    /* Non-square input, K = 3: x is (1, 1, 3, 4), all-ones kernel sums each 3x3 window. */
    const float x3[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    const float k3[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    float y3[2];
    nc_ref_conv(y3, x3, k3, NULL, 1, 1, 3, 4, 1, 3);
    CHECK(y3[0] == 1 + 2 + 3 + 5 + 6 + 7 + 9 + 10 + 11 && y3[1] == 2 + 3 + 4 + 6 + 7 + 8 + 10 + 11 + 12);
}

static void test_activations(void) {
    const float x[4] = {-2.0f, 0.0f, 0.5f, 30.0f};
    float y[4];
    nc_ref_tanh(y, x, 4);
    CHECK_CLOSE(y[0], -0.96402758, 1e-7, 1e-6);
    CHECK(y[1] == 0.0f);
    CHECK_CLOSE(y[2], 0.46211716, 1e-7, 1e-6);
    CHECK(y[3] == 1.0f);
    nc_ref_relu(y, x, 4);
    CHECK(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.5f && y[3] == 30.0f);
    nc_ref_sigmoid(y, x, 4);
    CHECK_CLOSE(y[0], 0.11920292, 1e-7, 1e-6);
    CHECK(y[1] == 0.5f);
    CHECK_CLOSE(y[2], 0.62245933, 1e-7, 1e-6);
    /* In place. */
    float z[2] = {-1.0f, 2.0f};
    nc_ref_relu(z, z, 2);
    CHECK(z[0] == 0.0f && z[1] == 2.0f);
}

static void test_pool(void) {
    /* x is (1, 1, 4, 4). */
    const float x[16] = {1, 2, 5, 6, 3, 4, 7, 8, -1, -2, 0, 0, -3, -4, 0, 9};
    float y[4];
    nc_ref_maxpool(y, x, 1, 1, 4, 4, 2, 2);
    CHECK(y[0] == 4 && y[1] == 8 && y[2] == -1 && y[3] == 9);
    nc_ref_avgpool(y, x, 1, 1, 4, 4, 2, 2);
    CHECK(y[0] == 2.5f && y[1] == 6.5f && y[2] == -2.5f && y[3] == 2.25f);
    nc_ref_maxpool(y, x, 1, 1, 4, 4, 4, 4);
    CHECK(y[0] == 9);
    /* Window 3, stride 1 on 4x4: 2x2 outputs. All-negative windows must not return 0. */
    const float n[16] = {-5, -4, -3, -2, -6, -7, -8, -9, -1, -1, -1, -1, -2, -2, -2, -2};
    nc_ref_maxpool(y, n, 1, 1, 4, 4, 3, 1);
    CHECK(y[0] == -1 && y[1] == -1 && y[2] == -1 && y[3] == -1);
    /* Floor: 5x5 input, window 2 stride 2 gives 2x2 (the last row and column are dropped). */
    float x5[25], y5[4];
    for (int i = 0; i < 25; i++) x5[i] = (float)i;
    nc_ref_maxpool(y5, x5, 1, 1, 5, 5, 2, 2);
    CHECK(y5[0] == 6 && y5[1] == 8 && y5[2] == 16 && y5[3] == 18);
}

static void test_dense_softmax(void) {
    /* x is (2, 3), w is (2, 3), b is (2). */
    const float x[6] = {1, 2, 3, -1, 0, 1};
    const float w[6] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    const float b[2] = {10, -10};
    float y[4];
    nc_ref_dense(y, x, w, b, 2, 3, 2);
    CHECK(y[0] == 8 && y[1] == -7 && y[2] == 8 && y[3] == -10);
    nc_ref_dense(y, x, w, NULL, 2, 3, 2);
    CHECK(y[0] == -2 && y[1] == 3);

    float s[3] = {1000.0f, 1000.0f, 0.0f}; /* large values must not overflow */
    nc_ref_softmax(s, s, 1, 3);
    CHECK_CLOSE(s[0], 0.5, 1e-7, 0);
    CHECK_CLOSE(s[1], 0.5, 1e-7, 0);
    CHECK(s[2] == 0.0f);
    float t[3] = {0.0f, 1.0f, 2.0f};
    nc_ref_softmax(t, t, 1, 3);
    CHECK_CLOSE(t[0], 0.09003057, 1e-7, 1e-6);
    CHECK_CLOSE(t[1], 0.24472847, 1e-7, 1e-6);
    CHECK_CLOSE(t[2], 0.66524096, 1e-7, 1e-6);
}

int main(void) {
    test_conv();
    test_activations();
    test_pool();
    test_dense_softmax();
    return nc_test_done("test_ref");
}
