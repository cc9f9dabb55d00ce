-- What a task costs at full size, counted on the meta device when it is checked: matmul/conv FLOPs
-- (torch.utils.flop_counter) and the least bytes a kernel must move (inputs, parameters, outputs).
ALTER TABLE tasks ADD COLUMN flops BIGINT;
ALTER TABLE tasks ADD COLUMN bytes_moved BIGINT;
ALTER TABLE tasks ADD COLUMN full_output_shapes JSON;
