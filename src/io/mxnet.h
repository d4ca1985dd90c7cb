/* Importing a model trained in MXNet (the course's NAME-symbol.json and NAME-EPOCH.params). */
#ifndef NC_MXNET_H
#define NC_MXNET_H

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds a nanoconv model from an MXNet symbol file and its params file (docs/MXNET_IMPORT.md).
 * The symbol must be a single chain from its data input to its one output, of the ops null, New, Convolution,
 * Activation, Pooling, Flatten, FullyConnected and SoftmaxOutput; every weight and bias is taken from the params
 * array named "arg:" + the name of the null node feeding it, and its shape is checked against the network.
 * input_text is the model's input, which MXNet symbols do not record: "CxHxW" (pixels fed raw, as the course did)
 * or a full input description such as "1x48x48 unit"; NULL means "1x28x28". name NULL means "model".
 * Every error names the file and the node, array index, byte offset or array name that was wrong. */
int nc_mxnet_import(nc_model **out, const char *symbol_path, const char *params_path, const char *input_text,
                    const char *name, nc_error *err);

#ifdef __cplusplus
}
#endif
#endif
