"""The intermediate representation the stages pass on: values, symbolic sizes, convolution specs."""
