package install

// preRelease knows the shims written before wt's first release (versions
// 1 to 9, which carry no seal) by the SHA-256 of their text with the
// recorded binary put back to @BIN@: an install made then is still
// recognised, so install updates it and uninstall removes it, and an
// edited one is still someone else's. It never grows: every shim since
// carries its own seal (shim.go).
var preRelease = map[string]struct {
	hook    string
	version int
}{
	"32c8ca973a43221acbbb4e88009ecbdb83537ff0e6e9676851b77d12c934693a": {"pre-commit", 1},
	"456cadd6e930525a20facf75eb13ebe04e64eb083cb54e356b18432bb4b3f72d": {"pre-push", 1},
	"608179daa6539e5af0350272ee325438a1e5ffc3e803ba6d5bc5bbbf4762e832": {"reference-transaction", 1},
	"943da21d12c72e9b7b2be4ba7d65eae9fc56a568c1b5f442bb3d48a105f2ae51": {"pre-commit", 2},
	"f475579f0828622562a1a23de6089a1d8f7e7ab5c2efd72f65026177ec631e10": {"pre-push", 2},
	"8779e541c4ded2b7ae9d0bb2c021b894000bbc0b83c890af3c3ebcc4df2156ad": {"reference-transaction", 2},
	"752f8e436e682328c9adcb075fbfb0d939e0f20c5a3a4e3a8ab553ba149328bd": {"post-checkout", 3},
	"a6840289bc6fe6935928c84bb36d1463f39bcaf887dc0e28cb57fa800529850d": {"pre-commit", 3},
	"71d695b78812573d06c7b841aa967c04bbe8d46beade1d7bd7a8cb879cc2a6ac": {"pre-push", 3},
	"b15e78da0b3dfa7c56c683595f43db0a6776c6bf0c59bc0536aef4354644adf7": {"pre-receive", 3},
	"ab4994ea24c4fc10df291ac082c2537f9397e90ea2123b40a5323b8d945a766b": {"reference-transaction", 3},
	"ac8ec28a60d7b68e17fd36ffaed7fb802153471611c963514f9f0cc19ee1971b": {"post-checkout", 4},
	"bf843e5169e350df90fce4e9b49dd6861b4399f5c5e50311baafe9337128160a": {"pre-commit", 4},
	"96a399d33b2cb189834d1351ee745dd06cbf5e231185e415ae63322b4de0fb7c": {"pre-push", 4},
	"da0296697eb61dd0155b85af2e7225d9d9c29b90463b9182964350b2c8526a2b": {"pre-receive", 4},
	"90d7eb8d6bfb4482d03d525a33241b3f8daa4f843783d75fa71421e51320156c": {"reference-transaction", 4},
	"2ba7cb0a8ab52ba7e424840e3376acb843c82d2f155f625e718a7729ed1a7bb4": {"post-checkout", 5},
	"1fc7ec032730e149eed72b1e29756de2f5890dec5cb005d58bf3d35072e7564a": {"pre-commit", 5},
	"bc15dc73b9a0f49c5cbcfe8933d6b7cd878aa84817c0d979e401f6b3f19f41fd": {"pre-push", 5},
	"bec7758628387575419f7af4fb5eadce06fe311992e105565a65fd94962b8691": {"pre-receive", 5},
	"5f67d33c826d5004cfdaa93103681605f27ecbc846bb17bddc26d291b3d75fc7": {"reference-transaction", 5},
	"e81505f82145d775a726bc1a7ee932943a5c423c2002eda517bd5c47ae4ddab4": {"forward", 6},
	"3debd087edaa25ea77b282f12d3ed0b6dd5493fbaf3e9a85d3ea906d79ecdbb9": {"post-checkout", 6},
	"151e47d4bf8a865567d84c4c36efefd984b1da6641b8b4cef2e49c4bdc1508d2": {"pre-commit", 6},
	"7d8f774c30dfddedb2bf9c5b1f333f97e9124f2243030bb16def3543ffbfc7f7": {"pre-push", 6},
	"80ce0663dba763789c174ef9c8ad66bd916b2251010103eff33035cbccff8524": {"pre-receive", 6},
	"c8e12127ca5c2896e8ca276eb65716e173c38ce563f7f38d5f757c4dab00d694": {"reference-transaction", 6},
	"cba3bac9dcfed9b84da747090bacfbdc6557aef22aec608d6602eb8dbbe077af": {"post-checkout", 7},
	"c3b6bfb0ceececb267aa3019a0f24da817c7a3c1269915b2c84c46e758cdec26": {"pre-commit", 7},
	"386f24aa2cbf7be338f33220d79259042f962b54e617eca3179a524785e70aca": {"pre-push", 7},
	"5e5793e3bc6ec674e6163f2e3fc5b2dcb8bcf29b45555f60c598ec83f03f0aae": {"reference-transaction", 7},
	"e0e0898d25e4a029fc730175565f5e398a44d9bf89c911d491cd90d53b6df74c": {"reference-transaction", 8},
	"6cea3370d5c32fe93f3867b848afe2c60e4cbd5434c03b8f04d743eff8069db3": {"post-receive", 9},
}
